package annotate

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/disasm"
	"github.com/stax-profiler/stax/internal/testutil"
)

type lineRow struct {
	addr uint64
	file string
	line int
	end  bool
}

type inlineRange struct {
	lo, hi uint64
	depth  int
	site   string
}

// dwarfLines builds a LineFunc (with inline chains) from an ELF's DWARF.
func dwarfLines(t *testing.T, f *elf.File) LineFunc {
	d, err := f.DWARF()
	if err != nil {
		t.Fatalf("DWARF: %v", err)
	}
	var rows []lineRow
	var inl []inlineRange
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(cu)
		if err != nil || lr == nil {
			r.SkipChildren()
			continue
		}
		files := lr.Files()
		var e dwarf.LineEntry
		for lr.Next(&e) == nil {
			name := ""
			if e.File != nil {
				name = e.File.Name
			}
			rows = append(rows, lineRow{e.Address, name, e.Line, e.EndSequence})
		}
		// Inlined subroutines of this unit.
		depth := 0
		for {
			ent, err := r.Next()
			if err != nil || ent == nil {
				break
			}
			if ent.Tag == 0 {
				depth--
				if depth < 0 {
					break
				}
				continue
			}
			if ent.Tag == dwarf.TagInlinedSubroutine {
				cf, _ := ent.Val(dwarf.AttrCallFile).(int64)
				cl, _ := ent.Val(dwarf.AttrCallLine).(int64)
				site := "?"
				if int(cf) < len(files) && files[cf] != nil {
					site = filepath.Base(files[cf].Name)
				}
				site = fmt.Sprintf("%s:%d", site, cl)
				if rs, err := d.Ranges(ent); err == nil {
					for _, rg := range rs {
						inl = append(inl, inlineRange{rg[0], rg[1], depth, site})
					}
				}
			}
			if ent.Children {
				depth++
			}
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].addr < rows[j].addr })
	return func(addr uint64) (string, int, []string) {
		i := sort.Search(len(rows), func(i int) bool { return rows[i].addr > addr }) - 1
		if i < 0 || rows[i].end {
			return "", 0, nil
		}
		var chain []inlineRange
		for _, r := range inl {
			if addr >= r.lo && addr < r.hi {
				chain = append(chain, r)
			}
		}
		sort.Slice(chain, func(i, j int) bool { return chain[i].depth > chain[j].depth })
		var sites []string
		for _, c := range chain {
			sites = append(sites, c.site)
		}
		return rows[i].file, rows[i].line, sites
	}
}

// TestRealBinary annotates a gcc-built function using its DWARF line
// table and source, with one synthetic sample per instruction weighted by
// position.
func TestRealBinary(t *testing.T) {
	testutil.RequireTool(t, "gcc")
	src, err := filepath.Abs(filepath.Join("testdata", "loops.c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "loops")
	if out, err := exec.Command("gcc", "-O2", "-g", "-fcf-protection=full", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var fn elf.Symbol
	byAddr := map[uint64]string{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			byAddr[s.Value] = s.Name
		}
		if s.Name == "work" {
			fn = s
		}
	}
	if fn.Size == 0 {
		t.Fatal("no symbol work")
	}
	text := f.Section(".text")
	code := make([]byte, fn.Size)
	if _, err := text.ReadAt(code, int64(fn.Value-text.Addr)); err != nil {
		t.Fatal(err)
	}
	insts := disasm.Decode(disasm.ArchX86_64, code, fn.Value, disasm.SyntaxATT)
	samples := map[uint64]uint64{}
	for i, in := range insts {
		samples[in.Addr] = uint64(i%9) * 10
	}
	a := Annotate(Input{
		Func: "work", Image: filepath.Base(bin), Start: fn.Value, Code: code,
		Arch: disasm.ArchFromELF(uint16(f.Machine)), Samples: samples,
		Lines: dwarfLines(t, f),
		Source: func(file string) ([]string, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			return strings.Split(string(b), "\n"), nil
		},
		Symbolize: func(addr uint64) (string, bool) { n, ok := byAddr[addr]; return n, ok },
	})
	out := a.String()
	t.Logf("\n%s", out)
	if len(a.SourceBlocks) == 0 || len(a.HotLines) == 0 {
		t.Fatal("no source information")
	}
	withText := 0
	for _, b := range a.SourceBlocks {
		if b.Text != "" {
			withText++
		}
	}
	if withText == 0 {
		t.Error("no source text read")
	}
	labels, backward := 0, 0
	for _, in := range a.Insts {
		if in.Label != "" {
			labels++
		}
		if in.Backward {
			backward++
		}
	}
	if labels == 0 || backward == 0 {
		t.Errorf("labels %d, backward jumps %d", labels, backward)
	}
	for _, want := range []string{"endbr64", "loops.c:", "<work.cold>", "work  loops", "inlined from loops.c:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

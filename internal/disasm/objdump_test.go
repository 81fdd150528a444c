package disasm

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

// objLine is one instruction line of "objdump -d --no-show-raw-insn".
type objLine struct {
	addr uint64
	text string
}

var objLineRE = regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)

// runObjdump disassembles path (optionally an address range) and returns
// instruction lines keyed by address.
func runObjdump(t testing.TB, path string, extra ...string) map[uint64]string {
	t.Helper()
	args := append([]string{"-d", "--no-show-raw-insn", "-w"}, extra...)
	args = append(args, path)
	out, err := exec.Command(testutil.RequireTool(t, "objdump"), args...).Output()
	if err != nil {
		t.Fatalf("objdump %v: %v", args, err)
	}
	m := make(map[uint64]string)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		mm := objLineRE.FindStringSubmatch(sc.Text())
		if mm == nil {
			continue
		}
		a, err := strconv.ParseUint(mm[1], 16, 64)
		if err != nil {
			continue
		}
		m[a] = mm[2]
	}
	return m
}

type funcSym struct {
	name       string
	addr, size uint64
}

// elfFuncs returns the sized function symbols of f (symtab, else dynsym).
func elfFuncs(f *elf.File) []funcSym {
	syms, err := f.Symbols()
	if err != nil || len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	seen := map[uint64]bool{}
	var out []funcSym
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Value == 0 || seen[s.Value] {
			continue
		}
		seen[s.Value] = true
		out = append(out, funcSym{s.Name, s.Value, s.Size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// readAt reads size bytes at virtual address addr from the executable
// sections of f.
func readAt(f *elf.File, addr, size uint64) []byte {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		if addr >= s.Addr && addr+size <= s.Addr+s.Size {
			b := make([]byte, size)
			if _, err := s.ReadAt(b, int64(addr-s.Addr)); err != nil {
				return nil
			}
			return b
		}
	}
	return nil
}

var (
	objCommentRE = regexp.MustCompile(`# ([0-9a-f]+)`)
	commentRE    = regexp.MustCompile(`\s+#.*$`)
	symRE        = regexp.MustCompile(`\s*<[^>]*>`)
	spaceRE      = regexp.MustCompile(`\s+`)
)

// normObjdump normalizes objdump text for comparison: comments and
// symbol annotations dropped, whitespace collapsed.
func normObjdump(s string) string {
	s = commentRE.ReplaceAllString(s, "")
	s = symRE.ReplaceAllString(s, "")
	return strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
}

// normOurs normalizes our text the same way; direct branch targets are
// printed by objdump without 0x.
func normOurs(in Inst) string {
	s := normObjdump(in.Text)
	if in.HasTarget {
		s = strings.Replace(s, fmt.Sprintf("%#x", in.Target), fmt.Sprintf("%x", in.Target), 1)
	}
	return s
}

type matchStats struct {
	insts, boundary, mnem, full int
	dataRefs, dataRefBad        int
	mnemDiff, fullDiff          map[string]int // objdump|ours -> count
	firstBoundaryErr            string
}

func (m *matchStats) String() string {
	p := func(n int) float64 { return float64(int(10000*float64(n)/float64(max(m.insts, 1)))) / 100 }
	return fmt.Sprintf("%d insts: boundaries %.2f%% (%d differ), mnemonics %.2f%% (%d differ), full text %.2f%% (%d differ)",
		m.insts, p(m.boundary), m.insts-m.boundary, p(m.mnem), m.insts-m.mnem, p(m.full), m.insts-m.full)
}

// compareFunc decodes code at addr and compares it with objdump's lines.
func compareFunc(st *matchStats, code []byte, addr uint64, want map[uint64]string, syntax Syntax) {
	if st.mnemDiff == nil {
		st.mnemDiff = map[string]int{}
		st.fullDiff = map[string]int{}
	}
	got := Decode(ArchX86_64, code, addr, syntax)
	gotAt := make(map[uint64]Inst, len(got))
	for _, in := range got {
		gotAt[in.Addr] = in
	}
	end := addr + uint64(len(code))
	for a := addr; a < end; a++ {
		w, ok := want[a]
		if !ok {
			if in, ok := gotAt[a]; ok {
				st.insts++ // an extra instruction counts as a boundary error
				if st.firstBoundaryErr == "" {
					st.firstBoundaryErr = fmt.Sprintf("%#x: we decode %q (% x), objdump has no instruction here", a, in.Text, in.Bytes)
				}
			}
			continue
		}
		st.insts++
		in, ok := gotAt[a]
		if !ok {
			if st.firstBoundaryErr == "" {
				st.firstBoundaryErr = fmt.Sprintf("%#x: objdump %q, we have no instruction here", a, w)
			}
			continue
		}
		st.boundary++
		wm, gm := Mnemonic(w), in.Mnemonic()
		if wm == gm {
			st.mnem++
		} else {
			st.mnemDiff[fmt.Sprintf("%-40s | %s  (% x)", w, in.Text, in.Bytes)]++
		}
		if mm := objCommentRE.FindStringSubmatch(w); mm != nil && in.HasDataRef {
			st.dataRefs++
			if v, _ := strconv.ParseUint(mm[1], 16, 64); v != in.DataRef {
				st.dataRefBad++
			}
		}
		if normObjdump(w) == normOurs(in) {
			st.full++
		} else {
			st.fullDiff[fmt.Sprintf("%-40s | %s", normObjdump(w), normOurs(in))]++
		}
	}
}

func logDiffs(t *testing.T, title string, m map[string]int, n int) {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	if len(l) > n {
		l = l[:n]
	}
	for _, e := range l {
		t.Logf("%s %5d  %s", title, e.v, e.k)
	}
}

func buildFixture(t *testing.T, name string, flags ...string) string {
	t.Helper()
	testutil.RequireTool(t, "gcc")
	out := filepath.Join(t.TempDir(), name)
	args := append(flags, "-o", out, filepath.Join("testdata", "golden.c"))
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, b)
	}
	return out
}

// TestObjdumpGolden compares our decoding of a gcc-built program with
// objdump: every instruction boundary must match; mnemonic and full-text
// match rates are reported.
func TestObjdumpGolden(t *testing.T) {
	testutil.RequireTool(t, "objdump")
	for _, v := range []struct {
		name  string
		flags []string
	}{
		{"O2", []string{"-O2", "-fcf-protection=full"}},
		{"O3avx2", []string{"-O3", "-mavx2", "-mfma", "-fcf-protection=full", "-fno-inline"}},
		{"O2pie", []string{"-O2", "-fPIE", "-pie", "-fcf-protection=none"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			bin := buildFixture(t, "golden-"+v.name, v.flags...)
			for _, syn := range []Syntax{SyntaxATT, SyntaxIntel} {
				var extra []string
				if syn == SyntaxIntel {
					extra = []string{"-M", "intel"}
				}
				want := runObjdump(t, bin, extra...)
				f, err := elf.Open(bin)
				if err != nil {
					t.Fatal(err)
				}
				var st matchStats
				nf := 0
				for _, fn := range elfFuncs(f) {
					code := readAt(f, fn.addr, fn.size)
					if code == nil {
						continue
					}
					nf++
					compareFunc(&st, code, fn.addr, want, syn)
				}
				f.Close()
				t.Logf("%s %s: %d functions, %s", v.name, syn, nf, &st)
				if st.boundary != st.insts || st.firstBoundaryErr != "" {
					t.Errorf("%s: boundary mismatch: %s", syn, st.firstBoundaryErr)
				}
				if st.dataRefBad != 0 {
					t.Errorf("%d of %d RIP-relative data references differ from objdump's", st.dataRefBad, st.dataRefs)
				}
				if syn == SyntaxATT && st.mnem != st.insts {
					t.Errorf("mnemonic mismatches")
				}
				if syn == SyntaxATT && st.full*100 < st.insts*95 {
					t.Errorf("full-text match below 95%%")
				}
				logDiffs(t, "mnem", st.mnemDiff, 10)
				logDiffs(t, "text", st.fullDiff, 15)
			}
		})
	}
}

// libcDebugFile finds the separate debug file of libc via its build ID.
func libcDebugFile(f *elf.File) string {
	s := f.Section(".note.gnu.build-id")
	if s == nil {
		return ""
	}
	d, err := s.Data()
	if err != nil || len(d) < 16 {
		return ""
	}
	id := d[16:]
	if len(id) < 2 {
		return ""
	}
	h := fmt.Sprintf("%x", id)
	return filepath.Join("/usr/lib/debug/.build-id", h[:2], h[2:]+".debug")
}

const libcPath = testutil.Libc

// TestLibc compares decoding of libc functions with objdump. Boundaries
// must match for the functions that use endbr64 and AVX2; for all other
// functions the match rates are reported.
func TestLibc(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	testutil.RequireTool(t, "objdump")
	f, err := elf.Open(testutil.RequireLibc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var funcs []funcSym
	if dbg := libcDebugFile(f); dbg != "" {
		if df, err := elf.Open(dbg); err == nil {
			funcs = elfFuncs(df)
			df.Close()
		}
	}
	if len(funcs) == 0 {
		funcs = elfFuncs(f)
	}
	if len(funcs) == 0 {
		testutil.Require(t, testutil.EnvPerf, "libc has no function symbols and its debug file is missing (apt-get install libc6-dbg)")
	}
	want := runObjdump(t, libcPath)
	strict := map[string]bool{
		"__memcpy_avx_unaligned_erms": true, "__strlen_avx2": true, "__memset_avx2_unaligned_erms": true,
		"__strchr_avx2": true, "__memchr_avx2": true, "__strcmp_avx2": true, "__memcmp_avx2_movbe": true,
		"__strcpy_avx2": true, "__memmove_avx_unaligned_erms": true, "__strrchr_avx2": true,
		"__memrchr_avx2": true, "__rawmemchr_avx2": true, "__strnlen_avx2": true,
		"__memcpy_evex_unaligned_erms": true, "__strlen_evex": true,
	}
	// By default every 8th function is compared besides the listed ones;
	// DISASM_FULL_LIBC=1 compares all of them.
	step := 8
	if os.Getenv("DISASM_FULL_LIBC") != "" {
		step = 1
	}
	var all, allIntel, strictSt matchStats
	found := 0
	for k, fn := range funcs {
		code := readAt(f, fn.addr, fn.size)
		if code == nil {
			continue
		}
		if _, ok := want[fn.addr]; !ok {
			continue // objdump is out of sync at this function start
		}
		if strict[fn.name] {
			found++
			var st matchStats
			compareFunc(&st, code, fn.addr, want, SyntaxATT)
			t.Logf("%s: %s", fn.name, &st)
			if st.firstBoundaryErr != "" {
				t.Errorf("%s: %s", fn.name, st.firstBoundaryErr)
			}
			compareFunc(&strictSt, code, fn.addr, want, SyntaxATT)
		}
		if k%step == 0 {
			compareFunc(&all, code, fn.addr, want, SyntaxATT)
		}
	}
	wantIntel := runObjdump(t, libcPath, "-M", "intel")
	for k, fn := range funcs {
		if k%step != 0 {
			continue
		}
		code := readAt(f, fn.addr, fn.size)
		if _, ok := wantIntel[fn.addr]; ok && code != nil {
			compareFunc(&allIntel, code, fn.addr, wantIntel, SyntaxIntel)
		}
	}
	if found == 0 {
		t.Logf("none of the AVX2 functions found")
	}
	t.Logf("AVX2/EVEX string functions: %s", &strictSt)
	t.Logf("libc functions (every %dth): %s; RIP-relative references %d, %d differ", step, &all, all.dataRefs, all.dataRefBad)
	if all.dataRefBad != 0 {
		t.Errorf("RIP-relative data references differ")
	}
	t.Logf("libc functions (every %dth), Intel syntax: %s", step, &allIntel)
	if strictSt.mnem != strictSt.insts {
		t.Errorf("AVX2 functions: mnemonic mismatches")
	}
	if all.firstBoundaryErr != "" {
		t.Logf("first boundary difference: %s", all.firstBoundaryErr)
	}
	n := 25
	if os.Getenv("DISASM_VERBOSE") != "" {
		n = 200
	}
	logDiffs(t, "mnem", all.mnemDiff, n)
	logDiffs(t, "text", all.fullDiff, n)
	logDiffs(t, "intel-text", allIntel.fullDiff, n)
}

package ittcollector

import (
	"debug/elf"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// hostMachine is the ELF e_machine of the running program.
func hostMachine(t testing.TB) uint32 {
	t.Helper()
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return uint32(f.Machine)
}

// snake turns a Go field name into the C one: CodeAddr code_addr, EHFrameHdrSize
// eh_frame_hdr_size, MethodID method_id.
func snake(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// The collector's C definition of the jitdump format (collector/stax_jitdump.h) is the Go
// one: every constant, layout size and field offset, and the host's machine in the header.
func TestFormatMatchesGo(t *testing.T) {
	needBuild(t)
	prog, err := buildTestProgram(t.TempDir(), "jitdumplayout")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runProg(t, 10*time.Second, nil, prog)
	consts := map[string]uint64{}
	sizes := map[string]uint64{}
	type field struct{ off, size uint64 }
	fields := map[string]map[string]field{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		num := func(s string) uint64 {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			return v
		}
		switch {
		case f[0] == "const" && len(f) == 3:
			consts[f[1]] = num(f[2])
		case f[0] == "size" && len(f) == 3:
			sizes[f[1]] = num(f[2])
		case f[0] == "field" && len(f) == 5:
			if fields[f[1]] == nil {
				fields[f[1]] = map[string]field{}
			}
			fields[f[1]][f[2]] = field{num(f[3]), num(f[4])}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}

	wantConsts := map[string]uint64{
		"MAGIC":               jitformat.Magic,
		"VERSION":             jitformat.Version,
		"FLAG_ARCH_TIMESTAMP": jitformat.FlagArchTimestamp,
		"ELF_MACH":            uint64(jitformat.HostMachine()),
		"CODE_LOAD":           jitformat.RecCodeLoad,
		"CODE_MOVE":           jitformat.RecCodeMove,
		"CODE_DEBUG_INFO":     jitformat.RecCodeDebugInfo,
		"CODE_CLOSE":          jitformat.RecCodeClose,
		"CODE_UNWINDING_INFO": jitformat.RecCodeUnwindingInfo,
		"STAX_METHOD_ID":      jitformat.RecStaxMethodID,
		"STAX_INLINE":         jitformat.RecStaxInline,
		"STAX_CODE_UNLOAD":    jitformat.RecStaxCodeUnload,
		"LOST_MAGIC":          jitformat.StaxLostMagic,
	}
	if !reflect.DeepEqual(consts, wantConsts) {
		t.Errorf("C constants %v\nGo constants %v", consts, wantConsts)
	}
	if m := hostMachine(t); consts["ELF_MACH"] != uint64(m) || jitformat.HostMachine() != m {
		t.Errorf("e_machine: C %d, Go %d, the running program %d", consts["ELF_MACH"], jitformat.HostMachine(), m)
	}

	layouts := map[reflect.Type]int{
		reflect.TypeFor[jitformat.Header]():         jitformat.HeaderSize,
		reflect.TypeFor[jitformat.RecordPrefix]():   jitformat.RecordPrefixSize,
		reflect.TypeFor[jitformat.CodeLoad]():       jitformat.CodeLoadSize,
		reflect.TypeFor[jitformat.CodeMove]():       jitformat.CodeMoveSize,
		reflect.TypeFor[jitformat.DebugInfo]():      jitformat.DebugInfoSize,
		reflect.TypeFor[jitformat.DebugEntry]():     jitformat.DebugEntrySize,
		reflect.TypeFor[jitformat.UnwindingInfo]():  jitformat.UnwindingInfoSize,
		reflect.TypeFor[jitformat.StaxMethodID]():   jitformat.StaxMethodIDSize,
		reflect.TypeFor[jitformat.StaxInline]():     jitformat.StaxInlineSize,
		reflect.TypeFor[jitformat.StaxCodeUnload](): jitformat.StaxCodeUnloadSize,
		reflect.TypeFor[jitformat.StaxLost]():       jitformat.StaxLostSize,
	}
	if len(sizes) != len(layouts) {
		t.Errorf("C defines %d layouts, Go %d: %v", len(sizes), len(layouts), sizes)
	}
	for typ, size := range layouts {
		name := typ.Name()
		if sizes[name] != uint64(size) || typ.Size() != uintptr(size) {
			t.Errorf("%s: C size %d, Go size %d (constant %d)", name, sizes[name], typ.Size(), size)
		}
		cf := fields[name]
		if len(cf) != typ.NumField() {
			t.Errorf("%s: C has %d fields, Go %d", name, len(cf), typ.NumField())
		}
		for i := range typ.NumField() {
			gf := typ.Field(i)
			c, ok := cf[snake(gf.Name)]
			if !ok || c.off != uint64(gf.Offset) || c.size != uint64(gf.Type.Size()) {
				t.Errorf("%s.%s: C %s at %d, %d bytes (present %v); Go at %d, %d bytes",
					name, gf.Name, snake(gf.Name), c.off, c.size, ok, gf.Offset, gf.Type.Size())
			}
		}
	}
}

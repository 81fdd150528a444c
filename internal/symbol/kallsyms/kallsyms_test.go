package kallsyms

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

const sample = `ffffffffc0a00000 t ext4_inode_csum	[ext4]
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000010 t local_fn
ffffffff81000040 D some_data
ffffffff81000080 W weak_fn
ffffffff81000100 T _etext
ffffffffc0a00100 T ext4_file_open	[ext4]
ffffffffc0b00000 t xfs_thing	[xfs]
`

func TestLookup(t *testing.T) {
	tab, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr     uint64
		name     string
		module   string
		notFound bool
	}{
		{addr: 0xffffffff80ffffff, notFound: true},
		{addr: 0xffffffff81000000, name: "_stext"},
		{addr: 0xffffffff81000005, name: "_stext"},
		{addr: 0xffffffff81000010, name: "local_fn"},
		{addr: 0xffffffff81000050, name: "local_fn"}, // data symbols are skipped
		{addr: 0xffffffff81000090, name: "weak_fn"},
		{addr: 0xffffffffc0a00010, name: "ext4_inode_csum", module: "ext4"},
		{addr: 0xffffffffc0a00100, name: "ext4_file_open", module: "ext4"},
		{addr: 0xffffffffc0a08000, name: "ext4_file_open", module: "ext4"},
		{addr: 0xffffffffc0a20000, notFound: true}, // beyond the last ext4 symbol
		{addr: 0xffffffffc0b00000 + LastSymbolSpan, notFound: true},
		{addr: 0xffffffffc0b00010, name: "xfs_thing", module: "xfs"},
	}
	for _, tt := range tests {
		s, ok := tab.Lookup(tt.addr)
		if ok == tt.notFound {
			t.Errorf("Lookup(%#x) found=%v (%v), want found=%v", tt.addr, ok, s, !tt.notFound)
			continue
		}
		if ok && (s.Name != tt.name || s.Module != tt.module) {
			t.Errorf("Lookup(%#x) = %q [%q], want %q [%q]", tt.addr, s.Name, s.Module, tt.name, tt.module)
		}
	}
	if s, _ := tab.Lookup(0xffffffffc0a00100); s.String() != "ext4_file_open [ext4]" {
		t.Errorf("String() = %q", s.String())
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		is       error
		substr   string
	}{
		{name: "restricted", in: "0000000000000000 T _stext\n0000000000000000 t foo [m]\n", is: ErrRestricted},
		{name: "bad address", in: "zzzz T foo\n", substr: "bad address"},
		{name: "short line", in: "ffff T\n", substr: "malformed"},
		{name: "bad module", in: "ffff T foo ext4\n", substr: "module"},
		{name: "long line", in: "ffff T " + strings.Repeat("a", MaxLineLen+10) + "\n", substr: "too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("error %v, want %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.substr) {
				t.Fatalf("error %q lacks %q", err, tt.substr)
			}
		})
	}
	if !strings.Contains(ErrRestricted.Error(), "kernel.kptr_restrict") {
		t.Fatal("restriction error must name the sysctl")
	}
}

func TestProcKallsyms(t *testing.T) {
	tab, err := Load(DefaultPath)
	if err != nil {
		testutil.Require(t, testutil.EnvRoot, "read the kernel's symbols: %v", err)
	}
	if tab.Len() == 0 {
		t.Fatal("no symbols")
	}
	// Every symbol must resolve to itself (or an alias at the same address).
	for _, s := range tab.Symbols()[:min(tab.Len(), 5000)] {
		got, ok := tab.Lookup(s.Addr)
		if !ok || got.Addr != s.Addr {
			t.Fatalf("Lookup(%#x) = %v, %v", s.Addr, got, ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("0000000000000000 T x\n")
	f.Add("ffffffffffffffff T last\n")
	f.Fuzz(func(t *testing.T, in string) {
		tab, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, s := range tab.Symbols() {
			got, ok := tab.Lookup(s.Addr)
			if !ok || got.Addr != s.Addr {
				t.Fatalf("Lookup(%#x) = %v, %v", s.Addr, got, ok)
			}
		}
	})
}

func BenchmarkLookup(b *testing.B) {
	data, err := os.ReadFile(DefaultPath)
	if err != nil {
		b.Skip(err)
	}
	tab, err := Parse(strings.NewReader(string(data)))
	if err != nil {
		b.Skip(err)
	}
	syms := tab.Symbols()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tab.Lookup(syms[i%len(syms)].Addr + 1)
		i += 7919
	}
}

// BenchmarkParseProc parses this machine's /proc/kallsyms (read once, parsed from memory):
// stax loads it on every run that meets a kernel frame.
func BenchmarkParseProc(b *testing.B) {
	data, err := os.ReadFile(DefaultPath)
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		tab, err := Parse(bytes.NewReader(data))
		if err != nil {
			b.Skip(err)
		}
		b.ReportMetric(float64(tab.Len()), "symbols")
	}
}

// synthetic returns kallsyms text of n text symbols 0x40 bytes apart, listed in reverse
// when reverse is set, with a local alias listed before each tenth global symbol.
func synthetic(n int, reverse bool) string {
	var b strings.Builder
	for k := range n {
		i := k
		if reverse {
			i = n - 1 - k
		}
		addr := 0xffffffff81000000 + uint64(i)*0x40
		if i%10 == 0 {
			fmt.Fprintf(&b, "%016x t alias_%d\n", addr, i)
		}
		fmt.Fprintf(&b, "%016x T some_kernel_function_%d\n", addr, i)
	}
	return b.String()
}

// TestParseManySymbols parses more symbols than one chunk of the table holds.
func TestParseManySymbols(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		tab, err := Parse(strings.NewReader(synthetic(12305, reverse)))
		if err != nil {
			t.Fatal(err)
		}
		if tab.Len() != 12305 {
			t.Fatalf("reverse=%v: %d symbols, want %d", reverse, tab.Len(), 12305)
		}
		for i := 0; i < tab.Len(); i++ {
			addr := 0xffffffff81000000 + uint64(i)*0x40
			s, ok := tab.Lookup(addr + 0x3f)
			if want := fmt.Sprintf("some_kernel_function_%d", i); !ok || s.Name != want || s.Addr != addr {
				t.Fatalf("reverse=%v: Lookup(%#x) = %v, %v; want %s", reverse, addr+0x3f, s, ok, want)
			}
		}
	}
}

// TestParseMemory keeps what parsing costs in memory near the size of the text: a kernel
// lists 100,000 symbols and more, and stax reads them on every run that meets kernel code.
func TestParseMemory(t *testing.T) {
	text := synthetic(150_000, false)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tab, err := Parse(strings.NewReader(text))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > uint64(len(text))*3/2 {
		t.Errorf("parsing %d bytes of %d symbols allocated %d bytes, want at most 1.5 times the text", len(text), tab.Len(), got)
	}
}

package resolve

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/symbol"
)

// anonCode maps pages of executable memory in this process, as a JIT would, and tells a
// resolver of them. The resolver's clock reads *clock.
func anonCode(t *testing.T, pages int) (*Resolver, uint32, []byte, uint64, *uint64) {
	t.Setenv("STAX_HOME", t.TempDir())
	mem, err := syscall.Mmap(-1, 0, pages*pageSize, syscall.PROT_READ|syscall.PROT_WRITE|syscall.PROT_EXEC, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap executable memory: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	start := uint64(uintptrOf(mem))
	pid := uint32(os.Getpid())
	tr := proc.NewTracker()
	tr.AddMapping(int(pid), proc.Mapping{Start: start, End: start + uint64(len(mem)), Path: "//anon", Time: 1})
	r := New(tr, symbol.Options{})
	clock := new(uint64)
	r.snaps.clock = func() uint64 { return *clock }
	return r, pid, mem, start, clock
}

var (
	codeA = []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xc0, 0x01, 0xeb, 0xfa}
	codeB = []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe8, 0x03, 0x75, 0xfa, 0x5d, 0xc3}
)

// TestCodeOfPerfMapJITReadWhileItRan: a perf map that names code only after its memory
// changed (freed while the process lives on) gets the bytes read at its first sample, not
// those read when it was named.
func TestCodeOfPerfMapJITReadWhileItRan(t *testing.T) {
	r, pid, mem, start, clock := anonCode(t, 1)
	copy(mem, codeA)
	*clock = 11
	r.NoteLeaf(pid, 10, r.Generation(pid, 10), start+4)
	clear(mem) // freed
	*clock = 20
	r.JIT(pid).AddPerfMap(1, []jit.PerfMapEntry{{Start: start, Size: uint64(len(codeA)), Name: "late"}}, 20)
	*clock = 21
	c := r.CodeFor(pid, start+4, 10)
	if c.Origin != "memory" || !bytes.Equal(c.Bytes, codeA) || c.Warning != "" || len(c.Gaps) != 0 || c.LoadTime != 20 {
		t.Errorf("code of a function freed before it was named: origin %q, bytes % x (want % x), warning %q, gaps %v, load %d",
			c.Origin, c.Bytes, codeA, c.Warning, c.Gaps, c.LoadTime)
	}
	// Other code loaded later at the same address is another piece.
	r.JIT(pid).AddPerfMap(1, []jit.PerfMapEntry{{Start: start, Size: 8, Name: "later"}}, 30)
	if a, b := r.CodeKey(pid, start+4, 25), r.CodeKey(pid, start+4, 35); a == b || a.Kind != codeJIT || a.Stamp != 20 || b.Stamp != 30 {
		t.Errorf("code keys before and after the address was reused: %+v, %+v", a, b)
	}
}

// TestCodeWrittenIntoAReadPage: function B is written into a page read when function A
// was sampled; B's samples have the page read again, and B, named at exit, gets its own
// bytes, not the zeros the page held before B was written there.
func TestCodeWrittenIntoAReadPage(t *testing.T) {
	r, pid, mem, start, clock := anonCode(t, 1)
	copy(mem, codeA)
	*clock = 11
	r.NoteLeaf(pid, 10, r.Generation(pid, 10), start+4)
	copy(mem[0x800:], codeB)
	*clock = 14
	r.NoteLeaf(pid, 13, r.Generation(pid, 13), start+0x804)
	r.NoteLeaf(pid, 15, r.Generation(pid, 15), start+4) // A again: nothing read
	clear(mem)                                          // the process is gone
	*clock = 30
	r.JIT(pid).AddPerfMap(1, []jit.PerfMapEntry{{Start: start, Size: uint64(len(codeA)), Name: "a"},
		{Start: start + 0x800, Size: uint64(len(codeB)), Name: "b"}}, 30)
	for _, w := range []struct {
		addr, t uint64
		code    []byte
	}{{start + 4, 10, codeA}, {start + 0x804, 13, codeB}} {
		c := r.CodeFor(pid, w.addr, w.t)
		if !bytes.Equal(c.Bytes, w.code) || len(c.Gaps) != 0 {
			t.Errorf("code at %#x: % x (gaps %v), want % x", w.addr, c.Bytes, c.Gaps, w.code)
		}
	}
	if len(r.snaps.pages) != 1 || len(r.snaps.pages[pageKey{pid, start}]) != 2 {
		t.Errorf("readings kept: %d pages, want one page read twice", len(r.snaps.pages))
	}
}

// TestCodeRewrittenAtTheSameAddress: other code written over sampled code, at the same
// addresses, is read again once recheckNs passed since the last reading.
func TestCodeRewrittenAtTheSameAddress(t *testing.T) {
	r, pid, mem, start, clock := anonCode(t, 1)
	copy(mem, codeA)
	*clock = 11
	r.NoteLeaf(pid, 10, 0, start+4)
	copy(mem, codeB)
	t2 := uint64(10 + recheckNs)
	*clock = t2 + 1
	r.NoteLeaf(pid, t2, 0, start+4)
	clear(mem)
	*clock = t2 + 100
	for _, w := range []struct {
		t    uint64
		code []byte
	}{{10, codeA}, {t2, codeB}} {
		if c := r.CodeFor(pid, start+4, w.t); !bytes.Equal(c.Bytes[:len(w.code)], w.code) {
			t.Errorf("window at time %d: % x, want % x first", w.t, c.Bytes, w.code)
		}
	}
}

// TestCodeAnnouncedAgainIsReadAgain: a perf map line written again over sampled code (a
// new object of the same function at the same address, whose samples land at the old
// one's offsets) has the page read at the next sample, well before recheckNs, so the new
// object gets its own bytes and the old one keeps its.
func TestCodeAnnouncedAgainIsReadAgain(t *testing.T) {
	r, pid, mem, start, clock := anonCode(t, 1)
	line := []jit.PerfMapEntry{{Start: start, Size: uint64(len(codeB)), Name: "JS:*f"}}
	copy(mem, codeA)
	r.JIT(pid).AddPerfMap(1, line, 5)
	*clock = 11
	r.NoteLeaf(pid, 10, 0, start+4)
	copy(mem, codeB)
	r.JIT(pid).AddPerfMap(1, line, 20)
	*clock = 22
	r.NoteLeaf(pid, 21, 0, start+4)
	clear(mem)
	*clock = 40
	for _, w := range []struct {
		t    uint64
		code []byte
	}{{10, codeA}, {21, codeB}} {
		c := r.CodeFor(pid, start+4, w.t)
		if len(c.Bytes) < len(codeA) || !bytes.Equal(c.Bytes[:len(codeA)], w.code[:len(codeA)]) || len(c.Gaps) != 0 {
			t.Errorf("code sampled at %d: % x (gaps %v, %s), want % x", w.t, c.Bytes, c.Gaps, c.Error, w.code)
		}
	}
}

// TestCodeNotCaptured: the parts of a piece of code no reading holds are gaps, with why,
// never the zeros (or other code) that memory held at another time.
func TestCodeNotCaptured(t *testing.T) {
	r, pid, mem, start, clock := anonCode(t, 4)
	*clock = 6
	r.NoteLeaf(pid, 5, 0, start+0x3010) // reads pages 2 and 3 before F is written
	f := make([]byte, 0x3800)
	for i := range f {
		f[i] = 0x90
	}
	copy(mem[0x100:], f)
	*clock = 11
	r.NoteLeaf(pid, 10, 0, start+0x110) // reads pages 0 and 1
	if err := syscall.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	*clock = 30
	r.JIT(pid).AddPerfMap(1, []jit.PerfMapEntry{{Start: start + 0x100, Size: uint64(len(f)), Name: "f"}}, 30)
	c := r.CodeFor(pid, start+0x110, 10)
	if len(c.Gaps) != 1 || c.Gaps[0].Start != start+0x2000 || c.Gaps[0].End != start+0x3900 || c.Gaps[0].Why != "the memory was unmapped before they were read" {
		t.Fatalf("gaps %+v, want one from page 2 to the end", c.Gaps)
	}
	if !bytes.Equal(c.Bytes[:0x1f00], f[:0x1f00]) || !bytes.Equal(c.Bytes[0x1f00:], make([]byte, 0x1900)) {
		t.Errorf("bytes are not the captured pages followed by zeros")
	}
	// A process gone before any reading: nothing captured, and annotate is told why.
	gone := uint32(1<<22 + 7) // above pid_max's limit: no such process
	r.tracker.AddMapping(int(gone), proc.Mapping{Start: start, End: start + pageSize, Path: "//anon", Time: 1})
	r.NoteLeaf(gone, 10, 0, start+4)
	r.JIT(gone).AddPerfMap(1, []jit.PerfMapEntry{{Start: start, Size: 16, Name: "g"}}, 30)
	c = r.CodeFor(gone, start+4, 10)
	want := fmt.Sprintf("code bytes for %#x-%#x were not captured: the process had exited before they were read", start, start+16)
	if c.Error != want || len(c.Bytes) != 0 {
		t.Errorf("error %q with %d bytes, want %q", c.Error, len(c.Bytes), want)
	}
}

// BenchmarkNoteLeaf is the per-sample cost of NoteLeaf once its page was looked at.
func BenchmarkNoteLeaf(b *testing.B) {
	r := New(proc.NewTracker(), symbol.Options{})
	r.NoteLeaf(1, 1, 0, 0x7f0000001000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.NoteLeaf(1, uint64(i), 0, 0x7f0000001000+uint64(i&0xff))
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

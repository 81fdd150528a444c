package resolve

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/symbol"
)

// anonCode maps a page of executable memory in this process, as a JIT would, and tells a
// resolver of it.
func anonCode(t *testing.T) (*Resolver, uint32, []byte, uint64) {
	t.Setenv("STAX_HOME", t.TempDir())
	mem, err := syscall.Mmap(-1, 0, pageSize, syscall.PROT_READ|syscall.PROT_WRITE|syscall.PROT_EXEC, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		t.Skipf("mmap executable memory: %v", err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	start := uint64(uintptrOf(mem))
	pid := uint32(os.Getpid())
	tr := proc.NewTracker()
	tr.AddMapping(int(pid), proc.Mapping{Start: start, End: start + pageSize, Path: "//anon", Time: 1})
	return New(tr, symbol.Options{}), pid, mem, start
}

// TestCodeOfPerfMapJITReadWhileItRan: a perf map that names code only after its memory
// changed (the process exited, or freed it) still gets the bytes read at the first sample.
func TestCodeOfPerfMapJITReadWhileItRan(t *testing.T) {
	r, pid, mem, start := anonCode(t)
	code := []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xc0, 0x01, 0xeb, 0xfa}
	copy(mem, code)
	r.NoteLeaf(pid, 10, r.Generation(pid, 10), start+4)
	for i := range mem {
		mem[i] = 0 // freed
	}
	r.JIT(pid).AddPerfMap(1, []jit.PerfMapEntry{{Start: start, Size: uint64(len(code)), Name: "late"}}, 20)
	// The process lives: memory is read again, and its zeros are flagged.
	c := r.CodeFor(pid, start+4, 10)
	if c.Origin != "memory" || !strings.Contains(c.Warning, "zero bytes") || c.LoadTime != 20 {
		t.Errorf("code read from zeroed memory: origin %q, warning %q, load %d", c.Origin, c.Warning, c.LoadTime)
	}
	// As if it had exited: the snapshot taken at the first sample has the code.
	if b := r.fromSnapshots(pid, start, uint64(len(code)), 10); !bytes.Equal(b, code) {
		t.Errorf("snapshot % x, want % x", b, code)
	}
	// Other code loaded later at the same address is another piece.
	r.JIT(pid).AddPerfMap(1, []jit.PerfMapEntry{{Start: start, Size: 8, Name: "later"}}, 30)
	if a, b := r.CodeKey(pid, start+4, 25), r.CodeKey(pid, start+4, 35); a == b || a.Kind != codeJIT || a.Stamp != 20 || b.Stamp != 30 {
		t.Errorf("code keys before and after the address was reused: %+v, %+v", a, b)
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

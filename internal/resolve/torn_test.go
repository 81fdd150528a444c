package resolve

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/jit/jitformat"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/symbol"
)

// A jitdump that ends in part of a record (its writer stopped in the middle of one) is read
// up to it, and its status says the rest is a torn record, not a file read only in part.
func TestJITWatcherSaysTornTail(t *testing.T) {
	pid := os.Getpid()
	h := jitformat.Header{Magic: jitformat.Magic, Version: jitformat.Version, TotalSize: jitformat.HeaderSize,
		ElfMach: jitformat.HostMachine(), Pid: uint32(pid), Timestamp: 1}
	b := jitformat.Append(nil, &h)
	name := "torn_fn\x00"
	p := jitformat.RecordPrefix{ID: jitformat.RecCodeLoad, TotalSize: uint32(jitformat.RecordPrefixSize + jitformat.CodeLoadSize + len(name) + 16), Timestamp: 2}
	b = jitformat.Append(b, &p)
	l := jitformat.CodeLoad{Pid: uint32(pid), Tid: uint32(pid), VMA: 0x7f0000001000, CodeAddr: 0x7f0000001000, CodeSize: 16}
	b = append(append(jitformat.Append(b, &l), name...), make([]byte, 16)...)
	b = append(b, b[jitformat.HeaderSize:jitformat.HeaderSize+10]...) // 10 bytes of the next record
	path := "/tmp/jit-" + strconv.Itoa(pid) + ".dump"
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(path)
	w := NewJITWatcher(New(proc.NewTracker(), symbol.Options{}), nil)
	w.Track(pid)
	w.Finish(time.Now().Add(time.Minute))
	defer w.Close()
	for _, s := range w.Sources() {
		if s.Kind == jit.SourceJitdump.String() && s.Path == path {
			if s.Functions != 1 || !strings.Contains(s.Error, "ends in 10 bytes of a record not written whole") {
				t.Errorf("%d functions (%q): want 1, the torn tail said", s.Functions, s.Error)
			}
			return
		}
	}
	t.Fatalf("the jitdump was not found: %+v", w.Sources())
}

//go:build linux

package stax

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/collectorabi"
)

// The spans file's layout (package collectorabi; stax's ITT collector writes the same): a
// 16-byte header (version 1), then records of u16 type, u16 size (a multiple of 8), u32
// thread id and a body.
const (
	fileMagic = collectorabi.SpansMagicV1
	hdrSize   = collectorabi.HeaderV1Size
	recName   = collectorabi.RecName
	recTask   = collectorabi.RecTask
	recMark   = collectorabi.RecMark
	maxName   = collectorabi.MaxName
	// EnvOn is set to 1 in the environment of the commands stax record launches.
	envOn = collectorabi.EnvSpans
	// envDir names the directory of the spans file, as for stax's JIT collector.
	envDir = collectorabi.EnvDir
	// watchEvery is how often an attach is looked for.
	watchEvery = 100 * time.Millisecond
)

// writer appends records to one spans file. Its descriptor stays open for the life of
// the process (a write racing a close could reach a reused descriptor); a new recording
// gets a new file, and a late write of the last one goes to the old, removed file.
type writer struct {
	fd    int
	mono0 uint64    // CLOCK_MONOTONIC at t0
	t0    time.Time // carries Go's monotonic reading, the same clock
	mu    sync.Mutex
	names sync.Map // name -> key
}

var (
	cur       atomic.Pointer[writer]
	watchOnce sync.Once
	openMu    sync.Mutex    // serialises opening the file
	nextKey   atomic.Uint64 // name keys, unique across files
)

// init turns spans on in a command stax launched. Without the variable the watcher
// starts on the first call; with it, a file that cannot be opened leaves spans off.
func init() {
	if os.Getenv(envOn) == "1" && !on() {
		state.Store(stateOff)
	}
}

// on opens (or restarts) the spans file and turns spans on; it reports whether they are.
func on() bool {
	openMu.Lock()
	defer openMu.Unlock()
	dir := os.Getenv(envDir)
	if dir == "" {
		dir = collectorabi.DefaultDir
	}
	// A new file each time (an earlier recording's, or one another user left, is removed
	// first), never through a link.
	path := filepath.Join(dir, collectorabi.GoSpansName(os.Getpid()))
	unix.Unlink(path)
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_APPEND|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	w := &writer{fd: fd}
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return false
	}
	w.t0 = time.Now()
	w.mono0 = uint64(ts.Nano())
	var hdr [hdrSize]byte
	copy(hdr[:], fileMagic)
	binary.LittleEndian.PutUint32(hdr[collectorabi.HdrPid:], uint32(os.Getpid()))
	if _, err := unix.Write(w.fd, hdr[:]); err != nil {
		return false
	}
	cur.Store(w)
	state.Store(stateOn)
	return true
}

// startWatch starts, once, the goroutine that turns spans on while the attach file
// exists.
func startWatch() {
	watchOnce.Do(func() {
		if !state.CompareAndSwap(stateUnknown, stateOff) {
			return
		}
		go watch(collectorabi.AttachPath(os.Getpid()))
	})
}

func watch(flag string) {
	for {
		_, err := os.Stat(flag)
		switch s := state.Load(); {
		case err == nil && s != stateOn:
			on()
		case err != nil && s == stateOn:
			state.Store(stateOff)
		}
		time.Sleep(watchEvery)
	}
}

func (w *writer) now() uint64 { return w.mono0 + uint64(time.Since(w.t0)) }

// key returns name's key, writing its NAME record the first time.
func (w *writer) key(name string) uint64 {
	if k, ok := w.names.Load(name); ok {
		return k.(uint64)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if k, ok := w.names.Load(name); ok {
		return k.(uint64)
	}
	k := nextKey.Add(1)
	n := name
	if len(n) > maxName {
		i := maxName
		for i > maxName-4 && n[i]&0xc0 == 0x80 {
			i-- // not inside a UTF-8 sequence
		}
		n = n[:i]
	}
	size := 16 + (len(n)+7)&^7
	rec := make([]byte, size)
	head(rec, recName, 0)
	binary.LittleEndian.PutUint64(rec[8:], k)
	copy(rec[16:], n)
	unix.Write(w.fd, rec)
	w.names.Store(name, k)
	return k
}

func head(rec []byte, typ uint16, tid uint32) {
	binary.LittleEndian.PutUint16(rec, typ)
	binary.LittleEndian.PutUint16(rec[2:], uint16(len(rec)))
	binary.LittleEndian.PutUint32(rec[4:], tid)
}

func begin(name string) Span {
	w := cur.Load()
	if w == nil {
		return Span{}
	}
	k := w.key(name)
	runtime.LockOSThread()
	return Span{w: w, key: k, tid: uint32(unix.Gettid()), start: w.now()}
}

var bufs = sync.Pool{New: func() any { return new([40]byte) }}

func end(s Span) {
	at := s.w.now()
	// Begin locked the goroutine to its thread, so that the thread's samples are the
	// span's: on that thread this is the goroutine that began it (another goroutine
	// ending it must not undo a lock of its own).
	if uint32(unix.Gettid()) == s.tid {
		runtime.UnlockOSThread()
	}
	if state.Load() != stateOn || cur.Load() != s.w {
		return // begun under an earlier recording: its name is not this file's
	}
	w := s.w
	b := bufs.Get().(*[40]byte)
	head(b[:], recTask, s.tid)
	le := binary.LittleEndian
	le.PutUint64(b[8:], s.key)
	le.PutUint64(b[16:], s.start)
	le.PutUint64(b[24:], at)
	le.PutUint64(b[32:], 0) // depth 0, reserved 0
	unix.Write(w.fd, b[:])
	bufs.Put(b)
}

func mark(name string) {
	w := cur.Load()
	if w == nil {
		return
	}
	k := w.key(name)
	b := bufs.Get().(*[40]byte)
	r := b[:24]
	head(r, recMark, uint32(unix.Gettid()))
	binary.LittleEndian.PutUint64(r[8:], k)
	binary.LittleEndian.PutUint64(r[16:], w.now())
	unix.Write(w.fd, r)
	bufs.Put(b)
}

//go:build linux

package stax

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/collectorabi"
)

// The spans file's layout (package collectorabi; stax's ITT collector writes the same): a
// 40-byte header (version 2: its counts of what could not be written are updated in
// place), then records of u16 type, u16 size (a multiple of 8), u32 thread id and a body.
const (
	fileMagic = collectorabi.SpansMagicV2
	hdrSize   = collectorabi.HeaderV2Size
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
//
// A record is written whole or not at all: each at the file's end (off), one at a time; a
// write that fails or is cut short (a full file system) is cut off the file again, and
// the spans and markers it held are counted in the header as dropped, with the failed
// write and its error, which stax status and stax spans report.
type writer struct {
	fd    int
	mono0 uint64    // CLOCK_MONOTONIC at t0
	t0    time.Time // carries Go's monotonic reading, the same clock
	mu    sync.Mutex
	names sync.Map // name -> key

	fileMu  sync.Mutex // the file's end and counts
	off     int64
	dropped uint64
	failed  uint32
	errno   uint32
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
	// Not O_APPEND: the header's counts are rewritten in place.
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
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
	binary.LittleEndian.PutUint32(hdr[collectorabi.HdrSize:], hdrSize)
	binary.LittleEndian.PutUint64(hdr[collectorabi.HdrStart:], startTicks())
	if n, err := unix.Pwrite(w.fd, hdr[:], 0); err != nil || n != len(hdr) {
		unix.Close(fd)
		unix.Unlink(path)
		return false
	}
	w.off = hdrSize
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

// key returns name's key, writing its NAME record the first time; false if it could not
// be written (it is tried again next time).
func (w *writer) key(name string) (uint64, bool) {
	if k, ok := w.names.Load(name); ok {
		return k.(uint64), true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if k, ok := w.names.Load(name); ok {
		return k.(uint64), true
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
	if !w.write(rec, 0) {
		return 0, false
	}
	w.names.Store(name, k)
	return k, true
}

// write writes rec, which holds n spans or markers, at the file's end, whole or not at
// all: one that fails is cut off again and counted (the spans and markers dropped, the
// write failed and its error) in the header.
func (w *writer) write(rec []byte, n uint64) bool {
	w.fileMu.Lock()
	defer w.fileMu.Unlock()
	k, err := unix.Pwrite(w.fd, rec, w.off)
	if err == nil && k == len(rec) {
		w.off += int64(k)
		return true
	}
	if k > 0 {
		unix.Ftruncate(w.fd, w.off) // no torn record
	}
	errno := unix.ENOSPC // a short write: out of room
	if e, ok := err.(unix.Errno); ok {
		errno = e
	}
	w.failed++
	w.errno = uint32(errno)
	w.dropped += n
	w.putCounts()
	return false
}

// drop counts n spans or markers not written (their name could not be).
func (w *writer) drop(n uint64) {
	w.fileMu.Lock()
	defer w.fileMu.Unlock()
	w.dropped += n
	w.putCounts()
}

// putCounts writes the counts into the header, in place (fileMu held).
func (w *writer) putCounts() {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], w.dropped)
	binary.LittleEndian.PutUint32(b[8:], w.failed)
	binary.LittleEndian.PutUint32(b[12:], w.errno)
	unix.Pwrite(w.fd, b[:], collectorabi.HdrDropped)
}

// startTicks is when this process started, in clock ticks since boot (field 22 of
// /proc/self/stat), 0 if unknown: the header names the process it was written by.
func startTicks() uint64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0
	}
	return v
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
	k, ok := w.key(name)
	if !ok {
		w.drop(1)
		return Span{} // nothing to end
	}
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
	w.write(b[:], 1)
	bufs.Put(b)
}

func mark(name string) {
	w := cur.Load()
	if w == nil {
		return
	}
	k, ok := w.key(name)
	if !ok {
		w.drop(1)
		return
	}
	b := bufs.Get().(*[40]byte)
	r := b[:24]
	head(r, recMark, uint32(unix.Gettid()))
	binary.LittleEndian.PutUint64(r[8:], k)
	binary.LittleEndian.PutUint64(r[16:], w.now())
	w.write(r, 1)
	bufs.Put(b)
}

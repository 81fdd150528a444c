package resolve

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/vdso"
)

// maxCodeBytes bounds the machine code kept or read for one function.
const maxCodeBytes = 16 << 20

// Code windows: code no symbol bounds (an image offset, unnamed JIT code) is kept as a
// window of bytes around the sampled address.
const (
	windowBefore = 128
	windowAfter  = 128
)

// Snapshots of anonymous executable memory, read when unnamed code is first sampled, so a
// perf map written only at exit can still be given bytes.
const (
	pageSize         = 4096
	maxSnapshotBytes = 64 << 20
)

// Kinds of code objects.
const (
	codeNone  uint8 = iota // nothing to annotate (kernel code, an unreadable image)
	codeJIT                // a JIT table entry
	codeImage              // a symbol of an ELF image (or a window where none covers)
	codeAnon               // executable memory no JIT source describes
)

// CodeKey identifies one piece of code, so the recorder keeps each once however many
// stacks end in it: a JIT entry by its start and load time (a function compiled again, or
// other code at a reused address, is another piece), image code by its image and symbol.
type CodeKey struct {
	Pid   uint32
	Kind  uint8
	Start uint64 // run-time address of the piece (of the sampled address for windows)
	Stamp uint64 // JIT: load time
	Image string // image: build-id, else path
}

// codeLoc is what locating an address found.
type codeLoc struct {
	key   CodeKey
	err   string
	f     *jit.Func
	jt    *jit.Table
	m     *proc.Mapping
	ie    *imageEntry
	vaddr uint64
	sym   symbol.Symbol
	hasSy bool
}

func (r *Resolver) locate(pid uint32, addr, t uint64) codeLoc {
	if addr >= kernelStart {
		return codeLoc{err: "kernel code is not annotated"}
	}
	m := r.tracker.Find(int(pid), addr, t)
	if m == nil || m.Anonymous() && m.Path != vdso.Name || m.Deleted() {
		if jt := r.JITIfAny(pid); jt != nil {
			if f, ok := jt.Lookup(addr, t); ok {
				load, _ := jt.Span(f)
				return codeLoc{key: CodeKey{Pid: pid, Kind: codeJIT, Start: f.Start, Stamp: load}, f: f, jt: jt, m: m}
			}
		}
		if m == nil {
			return codeLoc{key: CodeKey{Pid: pid, Start: addr}, err: "the address is in no mapping stax saw"}
		}
		if !m.Deleted() {
			return codeLoc{key: CodeKey{Pid: pid, Kind: codeAnon, Start: addr}, m: m}
		}
	}
	ie := r.image(pid, m)
	if ie.err != nil {
		return codeLoc{key: CodeKey{Pid: pid}, err: ie.err.Error()}
	}
	vaddr, ok := ie.im.Translate(symbol.Mapping{Start: m.Start, Len: m.End - m.Start, Pgoff: m.Pgoff}, addr)
	if !ok {
		return codeLoc{key: CodeKey{Pid: pid}, err: "address is outside the image's loadable segments"}
	}
	img := m.Path
	if len(m.BuildID) > 0 {
		img = fmt.Sprintf("%x", m.BuildID)
	}
	loc := codeLoc{key: CodeKey{Pid: pid, Kind: codeImage, Start: addr, Image: img}, m: m, ie: ie, vaddr: vaddr}
	if s, ok := ie.im.Symbol(vaddr); ok && s.Size > 0 {
		loc.sym, loc.hasSy = s, true
		loc.key.Start = addr - (vaddr - s.Start)
	}
	return loc
}

// CodeKey identifies the piece of code holding addr in pid at time t: cheap (lookups in
// tables already loaded), so the recorder can ask it of every new stack.
func (r *Resolver) CodeKey(pid uint32, addr, t uint64) CodeKey { return r.locate(pid, addr, t).key }

// CodeFor says where the code holding addr (in pid, at time t) is, for annotate: JIT code
// keeps its JIT's copy of the bytes, else (perf map JITs) bytes read from the live process;
// image code names its file; code no symbol or JIT source bounds is a window around addr.
func (r *Resolver) CodeFor(pid uint32, addr, t uint64) store.Code {
	loc := r.locate(pid, addr, t)
	switch loc.key.Kind {
	case codeJIT:
		return r.jitCode(pid, t, loc)
	case codeAnon:
		return r.anonCode(pid, addr, t, loc.m)
	case codeImage:
		return r.imageCode(pid, addr, loc)
	}
	return store.Code{Error: loc.err}
}

func (r *Resolver) jitCode(pid uint32, t uint64, loc codeLoc) store.Code {
	f := loc.f
	load, _ := loc.jt.Span(f)
	c := store.Code{Pid: int(pid), Start: f.Start, Size: f.Size, Arch: int(hostMachine()), LoadTime: load, Time: t}
	for _, l := range f.Lines {
		c.Lines = append(c.Lines, store.Line{Addr: l.Addr, File: l.File, Line: l.Line})
	}
	if len(f.Code) > 0 {
		c.Bytes, c.Origin = f.Code, "jitdump"
		return c
	}
	// A perf map gives no bytes: read them from the process while it lives, else from what
	// was read of its memory when the code was first sampled unnamed.
	if f.Size == 0 || f.Size > maxCodeBytes {
		c.Error = fmt.Sprintf("code size %d is out of bounds", f.Size)
		return c
	}
	b, err := readProcessMemory(int(pid), f.Start, f.Size)
	if err != nil {
		if snap := r.fromSnapshots(pid, f.Start, f.Size, t); snap != nil {
			b, err = snap, nil
		}
	}
	if err != nil {
		c.Error = "its bytes were not kept: " + r.whyNoBytes(pid, err)
		return c
	}
	c.Bytes, c.Origin, c.Warning = b, "memory", plausible(b)
	return c
}

// whyNoBytes explains a failed read of a process's memory.
func (r *Resolver) whyNoBytes(pid uint32, err error) string {
	if os.IsNotExist(err) || strings.Contains(err.Error(), "no such process") {
		return fmt.Sprintf("process %d had exited when its JIT named this code (a perf map written at exit), and no sample of it was read from memory while it ran", pid)
	}
	return "read process memory: " + err.Error()
}

// plausible says why bytes read from memory may not be the code that ran: code starts with
// an instruction, and a run of zero bytes is what freed or not yet written memory holds.
func plausible(b []byte) string {
	n := 0
	for n < len(b) && b[n] == 0 {
		n++
	}
	if n >= 8 || n == len(b) {
		return fmt.Sprintf("the bytes read from process memory start with %d zero bytes: the code may have been freed, moved or not yet written when it was read", n)
	}
	return ""
}

func (r *Resolver) anonCode(pid uint32, addr, t uint64, m *proc.Mapping) store.Code {
	lo := max(addr-min(addr, windowBefore), m.Start)
	hi := min(addr+windowAfter, m.End)
	c := store.Code{Pid: int(pid), Start: lo, Size: hi - lo, Arch: int(hostMachine()), Time: t}
	r.snapshot(pid, addr, t, m)
	b := r.fromSnapshots(pid, lo, hi-lo, t)
	if b == nil {
		c.Error = fmt.Sprintf("no JIT source names this code, and its bytes could not be read from process %d (it had exited)", pid)
		return c
	}
	c.Bytes, c.Origin, c.Warning = b, "memory", plausible(b)
	return c
}

func (r *Resolver) imageCode(pid uint32, addr uint64, loc codeLoc) store.Code {
	ie, m := loc.ie, loc.m
	arch := int(ie.im.ELF().Machine)
	bid := fmt.Sprintf("%x", ie.im.BuildID)
	start, vstart, size := loc.key.Start, loc.sym.Start, loc.sym.Size
	if !loc.hasSy {
		// No symbol bounds it: a window around the address, inside its segment.
		vlo, vhi := loc.vaddr-min(loc.vaddr, windowBefore), loc.vaddr+windowAfter
		for _, s := range ie.im.ELF().Loads {
			if loc.vaddr >= s.Vaddr && loc.vaddr < s.Vaddr+s.Filesz {
				vlo, vhi = max(vlo, s.Vaddr), min(vhi, s.Vaddr+s.Filesz)
			}
		}
		vstart, size = vlo, vhi-vlo
		start = addr - (loc.vaddr - vlo)
	}
	if ie.mem != nil {
		// The vdso: no file holds the code, so the run keeps its bytes.
		c := store.Code{Pid: int(pid), Start: start, Size: size, Arch: arch, BuildID: bid, Vaddr: vstart, Origin: "vdso"}
		off := start - m.Start + m.Pgoff
		if start < m.Start || off > uint64(len(ie.mem)) || size == 0 || size > uint64(len(ie.mem))-off {
			c.Error = "the function lies outside the vdso's bytes"
			return c
		}
		c.Bytes = append([]byte(nil), ie.mem[off:off+size]...)
		return c
	}
	path := strings.TrimSuffix(m.Path, " (deleted)")
	return store.Code{Pid: int(pid), Start: start, Size: size, Arch: arch, Path: path, BuildID: bid, Vaddr: vstart}
}

// JITCopy returns the JIT's own copy of the code at start (a jitdump entry beginning there,
// live at t), if one has arrived: it beats bytes read from memory.
func (r *Resolver) JITCopy(pid uint32, start, t uint64) ([]byte, uint64, bool) {
	jt := r.JITIfAny(pid)
	if jt == nil {
		return nil, 0, false
	}
	f, ok := jt.Lookup(start, t)
	if !ok || f.Start != start || len(f.Code) == 0 {
		return nil, 0, false
	}
	load, _ := jt.Span(f)
	return f.Code, load, true
}

type pageKey struct {
	pid  uint32
	page uint64
}

type pageSnap struct {
	gen  uint32 // the address space's generation at the sample that asked for it
	time uint64 // that sample's time
	b    []byte
}

// snapshots holds pages of anonymous executable memory read from live processes.
type snapshots struct {
	mu    sync.Mutex
	pages map[pageKey][]pageSnap
	bytes int
	seen  map[seenKey]struct{} // pages NoteLeaf looked at
}

type seenKey struct {
	pid  uint32
	gen  uint32
	page uint64
}

// maxSeenPages bounds NoteLeaf's memory of the pages it looked at.
const maxSeenPages = 1 << 20

// NoteLeaf is told of every sample's user leaf address as it is read, with the address
// space's generation at its time. The first sample in a page of executable memory no
// file backs and no JIT copy describes has the pages around it read at once, while the
// process surely lives: naming the stack comes later (symbol loading can take seconds),
// and a runtime that writes its perf map at exit (JVM DumpPerfMapAtExit, Mono --jitmap)
// names its code only when its memory is gone. A map lookup per sample otherwise.
func (r *Resolver) NoteLeaf(pid uint32, t uint64, gen uint32, addr uint64) {
	if addr == 0 || addr >= kernelStart {
		return
	}
	k := seenKey{pid, gen, addr &^ (pageSize - 1)}
	s := &r.snaps
	s.mu.Lock()
	_, ok := s.seen[k]
	if !ok && len(s.seen) < maxSeenPages {
		if s.seen == nil {
			s.seen = map[seenKey]struct{}{}
		}
		s.seen[k] = struct{}{}
	} else {
		ok = true
	}
	s.mu.Unlock()
	if ok {
		return
	}
	m := r.tracker.Find(int(pid), addr, t)
	if m == nil || !m.Anonymous() || m.Path == vdso.Name {
		return
	}
	if jt := r.JITIfAny(pid); jt != nil {
		if f, ok := jt.Lookup(addr, t); ok && len(f.Code) > 0 {
			return // the jitdump holds its bytes
		}
	}
	r.snapshotGen(pid, addr, t, gen, m)
}

// snapshot reads the pages around addr (the one holding it and its neighbours, inside m)
// from pid's memory, unless they were read in the same generation of its address space.
func (r *Resolver) snapshot(pid uint32, addr, t uint64, m *proc.Mapping) {
	r.snapshotGen(pid, addr, t, r.Generation(pid, t), m)
}

func (r *Resolver) snapshotGen(pid uint32, addr, t uint64, gen uint32, m *proc.Mapping) {
	first := addr&^(pageSize-1) - min(addr&^(pageSize-1), pageSize)
	s := &r.snaps
	for p := max(first, m.Start&^(pageSize-1)); p < addr&^(pageSize-1)+2*pageSize && p < m.End; p += pageSize {
		k := pageKey{pid, p}
		s.mu.Lock()
		have := false
		for _, sn := range s.pages[k] {
			have = have || sn.gen == gen
		}
		full := s.bytes+pageSize > maxSnapshotBytes
		s.mu.Unlock()
		if have || full {
			continue
		}
		b, err := readProcessMemory(int(pid), p, pageSize)
		if err != nil || len(b) != pageSize {
			continue
		}
		s.mu.Lock()
		if s.pages == nil {
			s.pages = map[pageKey][]pageSnap{}
		}
		s.pages[k] = append(s.pages[k], pageSnap{gen: gen, time: t, b: b})
		s.bytes += pageSize
		s.mu.Unlock()
	}
}

// fromSnapshots assembles [start, start+size) of pid's memory from its snapshots, each page
// from the one taken in the generation of time t (else the one asked for nearest t); nil
// if a page is missing.
func (r *Resolver) fromSnapshots(pid uint32, start, size, t uint64) []byte {
	if size == 0 || size > maxCodeBytes {
		return nil
	}
	gen := r.Generation(pid, t)
	s := &r.snaps
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]byte, 0, size)
	for a := start; a < start+size; {
		p := a &^ (pageSize - 1)
		snaps := s.pages[pageKey{pid, p}]
		if len(snaps) == 0 {
			return nil
		}
		best := -1
		for i, sn := range snaps {
			if sn.gen == gen {
				best = i
				break
			}
		}
		if best < 0 {
			best = 0
			for i, sn := range snaps {
				if dist(sn.time, t) < dist(snaps[best].time, t) {
					best = i
				}
			}
		}
		end := min(p+pageSize, start+size)
		out = append(out, snaps[best].b[a-p:end-p]...)
		a = end
	}
	return out
}

func dist(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

func readProcessMemory(pid int, start, size uint64) ([]byte, error) {
	if size == 0 || size > maxCodeBytes {
		return nil, fmt.Errorf("code size %d is out of bounds", size)
	}
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	n, err := f.ReadAt(b, int64(start))
	if n == 0 && err != nil {
		return nil, err
	}
	return b[:n], nil
}

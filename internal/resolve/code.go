package resolve

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/targetfile"
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

// Readings of anonymous executable memory. A JIT that names its code only in a perf map
// (perhaps written at exit), or not at all, leaves its bytes only in the process's memory,
// and that memory changes under it: code is written into pages that held other code or
// nothing, then freed and reused. So the pages around a sampled address are read as the
// sample is ingested, read again when a sample lands at an address of the page not sampled
// before or long after the last reading, and each piece of code takes, page by page, the
// reading nearest its samples' time among those made while the piece was surely there.
const (
	pageSize         = 4096
	maxSnapshotBytes = 64 << 20
	maxNoteBytes     = 64 << 10 // the most NoteLeaf reads for one sample (a named function)
	recheckNs        = 200e6    // a page sampled this long after its last reading is read again
	maxWatchedPages  = 1 << 20
	maxWatchedAddrs  = 1 << 20
)

// Kinds of code objects.
const (
	codeNone  uint8 = iota // nothing to annotate (kernel code, an unreadable image)
	codeJIT                // a JIT table entry
	codeImage              // a function of an ELF image (or a window where none bounds the address)
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
	sym   symbol.Symbol // the function holding the address: its symbol, or its .eh_frame range
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
	} else if lo, hi, ok := ie.im.FuncRange(vaddr); ok {
		loc.sym, loc.hasSy = symbol.Symbol{Start: lo, Size: hi - lo}, true // a function no symbol names
	}
	if loc.hasSy {
		loc.key.Start = addr - (vaddr - loc.sym.Start)
	}
	return loc
}

// CodeKey identifies the piece of code holding addr in pid at time t: cheap (lookups in
// tables already loaded), so the recorder can ask it of every new stack.
func (r *Resolver) CodeKey(pid uint32, addr, t uint64) CodeKey { return r.locate(pid, addr, t).key }

// CodeFor says where the code holding addr (in pid, at time t) is, for annotate: JIT code
// keeps its JIT's copy of the bytes, else (perf map JITs) the bytes read from the process's
// memory nearest t;
// image code names its file (the whole function: its symbol, else its .eh_frame range);
// code no symbol, function range or JIT source bounds is a window around addr.
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
	// A perf map gives no bytes: they come from the process's memory, as read nearest the
	// code's samples while it was there. Its load time bounds that from below only when
	// it was announced before it ran (a perf map written at exit names it afterwards).
	if f.Size == 0 || f.Size > maxCodeBytes {
		c.Error = fmt.Sprintf("code size %d is out of bounds", f.Size)
		return c
	}
	_, end := loc.jt.Span(f)
	b, gaps := r.codeBytes(pid, f.Start, f.Size, t, min(load, t), end)
	return fromMemory(c, b, gaps)
}

// fromMemory completes a piece of code whose bytes were read from memory: with its gaps,
// or, when nothing of it was captured, the reason.
func fromMemory(c store.Code, b []byte, gaps []store.Gap) store.Code {
	if len(gaps) == 1 && gaps[0].Start == c.Start && gaps[0].End == c.Start+uint64(len(b)) {
		c.Error = notCaptured(gaps[0])
		return c
	}
	c.Bytes, c.Gaps, c.Origin = b, gaps, "memory"
	if len(gaps) == 0 {
		c.Warning = plausible(b)
	}
	return c
}

// notCaptured says that a range of code has no bytes, and why.
func notCaptured(g store.Gap) string {
	return fmt.Sprintf("code bytes for %#x-%#x were not captured: %s", g.Start, g.End, g.Why)
}

// whyNoBytes explains a failed read of a process's memory.
func whyNoBytes(err error) string {
	if os.IsNotExist(err) || errors.Is(err, syscall.ESRCH) {
		return "the process had exited before they were read"
	}
	if errors.Is(err, syscall.EIO) {
		return "the memory was unmapped before they were read"
	}
	return "reading the process's memory failed: " + err.Error()
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
	b, gaps := r.codeBytes(pid, lo, hi-lo, t, t, jit.Forever)
	return fromMemory(c, b, gaps)
}

func (r *Resolver) imageCode(pid uint32, addr uint64, loc codeLoc) store.Code {
	ie, m := loc.ie, loc.m
	arch := int(ie.im.ELF().Machine)
	bid := fmt.Sprintf("%x", ie.im.BuildID)
	start, vstart, size := loc.key.Start, loc.sym.Start, loc.sym.Size
	if !loc.hasSy {
		// No symbol or function range bounds it: a window around the address, inside its segment.
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

// pageSnap is one reading of a page: every reading from read to seen (times on the
// samples' clock) found these bytes.
type pageSnap struct {
	read, seen uint64
	b          []byte // never changed once kept
}

// snapshots holds readings of pages of anonymous executable memory of live processes.
type snapshots struct {
	clock func() uint64 // the samples' clock (CLOCK_MONOTONIC); tests set their own

	mu    sync.Mutex
	pages map[pageKey][]pageSnap // in the order they were read
	bytes int
	watch map[seenKey]pageWatch // pages NoteLeaf looked at
	addrs int                   // sampled addresses held in watch
}

type seenKey struct {
	pid  uint32
	gen  uint32
	page uint64
}

// pageWatch is what NoteLeaf knows of a page in one generation of an address space.
type pageWatch struct {
	skip bool                // nothing to read: a file's code, the vdso
	last uint64              // time of the sample that last had it read
	offs map[uint16]struct{} // offsets of the addresses sampled in it
	jit  uint64              // the process's JIT table's generation when it was last read
}

func (s *snapshots) now() uint64 {
	if s.clock != nil {
		return s.clock()
	}
	return monotonicNow()
}

// due says whether a sample at time t, at offset off of the page k names, should have the
// memory around it read: the first sample in the page (NoteLeaf then settles whether the
// page is memory to read), the first at a new address of it, the first since the JIT
// table's generation became jitGen (code was announced over earlier code: a new object
// at the same addresses runs the same offsets), or the first after recheckNs without a
// reading. A map lookup per sample otherwise.
func (s *snapshots) due(k seenKey, off uint16, t, jitGen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.watch[k]
	switch {
	case !ok:
		if len(s.watch) >= maxWatchedPages {
			return false
		}
		if s.watch == nil {
			s.watch = map[seenKey]pageWatch{}
		}
		s.watch[k] = pageWatch{last: t, jit: jitGen}
		return true
	case w.skip:
		return false
	}
	if _, known := w.offs[off]; !known && s.addrs < maxWatchedAddrs {
		if w.offs == nil {
			w.offs = map[uint16]struct{}{}
		}
		w.offs[off] = struct{}{}
		s.addrs++
	} else if t < w.last+recheckNs && jitGen == w.jit {
		return false // known, or no room to remember it: read at most every recheckNs
	}
	w.jit = jitGen
	w.last = max(w.last, t)
	s.watch[k] = w
	return true
}

// settle records what the first sample in a page found: memory to read (and the sample's
// offset in it), or not.
func (s *snapshots) settle(k seenKey, off uint16, read bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.watch[k]
	if !ok || w.offs != nil || w.skip {
		return
	}
	if w.skip = !read; read && s.addrs < maxWatchedAddrs {
		w.offs = map[uint16]struct{}{off: {}}
		s.addrs++
	}
	s.watch[k] = w
}

// NoteLeaf is told of every sample's user leaf address as it is read, with the address
// space's generation at its time. A sample in executable memory no file backs and no
// JIT copy describes has the pages around it read at once, while the process surely lives
// and the code is surely there (naming the stack comes later, symbol loading can take
// seconds, and a runtime that writes its perf map at exit, JVM DumpPerfMapAtExit or Mono
// --jitmap, names its code only when its memory is gone), and read again when a sample
// lands at a new address of the page (new code may have been written there since), when
// the JIT has since announced code over earlier code (a new object at a reused address
// runs at the old one's offsets), or long after the last reading. A perf map that already names the code has all of it read.
func (r *Resolver) NoteLeaf(pid uint32, t uint64, gen uint32, addr uint64) {
	if addr == 0 || addr >= kernelStart {
		return
	}
	page := addr &^ (pageSize - 1)
	k := seenKey{pid, gen, page}
	off := uint16(addr - page)
	var jitGen uint64
	if jt := r.JITIfAny(pid); jt != nil {
		jitGen = jt.Generation(math.MaxUint64)
	}
	if !r.snaps.due(k, off, t, jitGen) {
		return
	}
	m := r.tracker.Find(int(pid), addr, t)
	anon := m != nil && m.Anonymous() && m.Path != vdso.Name
	r.snaps.settle(k, off, anon)
	if !anon {
		return
	}
	lo, hi := page-min(page, pageSize), page+2*pageSize
	if jt := r.JITIfAny(pid); jt != nil {
		if f, ok := jt.Lookup(addr, t); ok {
			if len(f.Code) > 0 {
				return // the jitdump holds its bytes
			}
			lo, hi = min(lo, f.Start&^(pageSize-1)), max(hi, (min(f.End(), m.End)+pageSize-1)&^(pageSize-1))
		}
	}
	lo, hi = max(lo, m.Start&^(pageSize-1), page-min(page, maxNoteBytes/2)), min(hi, m.End)
	hi = min(hi, lo+maxNoteBytes)
	if lo < hi {
		r.capture(pid, lo, hi)
	}
}

// capture reads the pages [lo, hi) of pid's memory now. A page whose bytes are those of
// its latest reading extends that reading to now; another is kept as a new reading (while
// the memory for readings lasts). It returns what was read: whole pages from lo, fewer
// than asked where the memory ends.
func (r *Resolver) capture(pid uint32, lo, hi uint64) ([]byte, error) {
	s := &r.snaps
	now := s.now()
	b, err := readProcessMemory(int(pid), lo, hi-lo)
	if err != nil {
		return nil, err
	}
	b = b[:len(b)&^(pageSize-1)]
	s.mu.Lock()
	defer s.mu.Unlock()
	for off := 0; off < len(b); off += pageSize {
		k := pageKey{pid, lo + uint64(off)}
		page := b[off : off+pageSize]
		snaps := s.pages[k]
		if n := len(snaps); n > 0 && bytes.Equal(snaps[n-1].b, page) {
			snaps[n-1].seen = max(snaps[n-1].seen, now)
			continue
		}
		if s.bytes+pageSize > maxSnapshotBytes {
			continue
		}
		if s.pages == nil {
			s.pages = map[pageKey][]pageSnap{}
		}
		s.pages[k] = append(snaps, pageSnap{read: now, seen: now, b: bytes.Clone(page)})
		s.bytes += pageSize
	}
	return b, nil
}

// nearest picks the reading of a page for code first sampled at t whose bytes were there
// from `from` until `until`: among the readings made while they were, the one nearest t
// (one whose span holds t is at distance 0); -1 if none was made then.
func nearest(snaps []pageSnap, t, from, until uint64) int {
	best, bestD := -1, uint64(0)
	for i, sn := range snaps {
		if sn.seen < from || sn.read >= until {
			continue // read before the code was written, or after it was replaced
		}
		d := uint64(0)
		switch {
		case sn.seen < t:
			d = t - sn.seen
		case sn.read > t:
			d = sn.read - t
		}
		if best < 0 || d < bestD {
			best, bestD = i, d
		}
	}
	return best
}

// codeBytes assembles [start, start+size) of pid's memory for a piece of code first sampled
// at t whose bytes were in place from `from` until `until`: each page from the reading
// nearest t made in that time, else read now if that time is not over. What no reading
// holds is a gap (zeros in the bytes), never bytes read at another time.
func (r *Resolver) codeBytes(pid uint32, start, size, t, from, until uint64) ([]byte, []store.Gap) {
	end := start + size
	first := start &^ (pageSize - 1)
	got := make([][]byte, (end-first+pageSize-1)/pageSize)
	lo, hi := uint64(0), uint64(0) // the pages that need reading now
	s := &r.snaps
	s.mu.Lock()
	for i := range got {
		p := first + uint64(i)*pageSize
		snaps := s.pages[pageKey{pid, p}]
		if j := nearest(snaps, t, from, until); j >= 0 {
			got[i] = snaps[j].b
			continue
		}
		if hi == 0 {
			lo = p
		}
		hi = p + pageSize
	}
	s.mu.Unlock()
	why := ""
	if hi > 0 {
		if s.now() >= until {
			why = "the memory was freed or reused before they were read"
		} else if b, err := r.capture(pid, lo, hi); err != nil {
			why = whyNoBytes(err)
		} else {
			why = "the memory was unmapped before they were read"
			for i := range got {
				p := first + uint64(i)*pageSize
				if got[i] == nil && p >= lo && p-lo < uint64(len(b)) {
					got[i] = b[p-lo : p-lo+pageSize]
				}
			}
		}
	}
	out := make([]byte, size)
	var gaps []store.Gap
	for i, b := range got {
		p := first + uint64(i)*pageSize
		a, z := max(p, start), min(p+pageSize, end)
		if b != nil {
			copy(out[a-start:], b[a-p:z-p])
			continue
		}
		if n := len(gaps); n > 0 && gaps[n-1].End == a {
			gaps[n-1].End = z
		} else {
			gaps = append(gaps, store.Gap{Start: a, End: z, Why: why})
		}
	}
	return out, gaps
}

func readProcessMemory(pid int, start, size uint64) ([]byte, error) {
	if size == 0 || size > maxCodeBytes {
		return nil, fmt.Errorf("code size %d is out of bounds", size)
	}
	f, err := targetfile.Open("/proc/" + strconv.Itoa(pid) + "/mem")
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

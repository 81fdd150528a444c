// Package resolve names sampled addresses: it walks the resolution chain (the mapped image's
// symbols, kernel symbols, JIT code tables) for the recorder and caches results per image
// and address, so each distinct address is named once.
package resolve

import (
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/vdso"
)

// Image names for frames that have no file.
const (
	ImageJIT     = "[jit]"
	ImageKernel  = "[kernel.kallsyms]"
	ImageUnknown = "[unknown]"
	ImageAnon    = "[anon]" // anonymous executable memory no JIT source describes
	// FuncTruncated is the root frame of a stack cut short: deeper callers were not recorded.
	FuncTruncated = "[truncated]"
)

// Resolver implements agg.Resolver over a process tracker, the images on disk, the kernel's
// symbols and per-process JIT tables.
type Resolver struct {
	tracker *proc.Tracker

	syms *symbol.Cache

	mu          sync.Mutex
	images      map[string]*imageEntry // by build-id, else path
	byID        map[string]*imageEntry // by raw build-id: images' lookups without a key made
	cache       map[frameKey]symbolized
	jits        sync.Map    // pid -> *jit.Table; read per sample, so without a lock
	jitBudget   *jit.Budget // shared by every JIT table
	kernelAsked atomic.Bool // a kernel frame was resolved, so kernel symbols were loaded

	version atomic.Uint64
	snaps   snapshots // memory read for annotate (code.go)
	// Errors counts images that could not be loaded, by message, for status.
	errors map[string]string
}

type imageEntry struct {
	path    string // the mapping's path, as the process names it
	im      *symbol.Image
	err     error
	mem     []byte // the image's bytes, for images read from memory (the vdso)
	hexOnce sync.Once
	hex     string // hexID's
	hexOf   string // the raw build-id hex was made from
	// file holds open a file no lasting path reaches (one deleted or replaced since it
	// was mapped): the image reads it, lazily, through /proc/self/fd.
	file *os.File
}

// hexID is the mapping's build-id in hex, else the image's: made once per image.
func (ie *imageEntry) hexID(mapped []byte) string {
	ie.hexOnce.Do(func() {
		switch {
		case len(mapped) > 0:
			ie.hex = hex.EncodeToString(mapped)
		case ie.err == nil && ie.im != nil:
			ie.hex = hex.EncodeToString(ie.im.BuildID)
		}
		ie.hexOf = string(mapped)
	})
	if string(mapped) != ie.hexOf {
		// Another build-id than the one the image was first asked with (an image found by
		// path for a mapping that carries one): as before, from the mapping.
		if len(mapped) > 0 {
			return hex.EncodeToString(mapped)
		}
		if ie.err == nil && ie.im != nil {
			return hex.EncodeToString(ie.im.BuildID)
		}
		return ""
	}
	return ie.hex
}

type frameKey struct {
	image *imageEntry
	vaddr uint64
}

// New returns a resolver over tracker, with symbols found as opts says.
func New(tracker *proc.Tracker, opts symbol.Options) *Resolver {
	return &Resolver{
		tracker: tracker,
		syms:    symbol.NewCache(opts),
		images:  map[string]*imageEntry{},
		byID:    map[string]*imageEntry{},
		cache:   map[frameKey]symbolized{},
		errors:  map[string]string{},

		jitBudget: jit.NewBudget(jitMemory()),
	}
}

// jitMemory is the JIT tables' budget: MaxJITMemory, or STAX_JIT_MEMORY MiB.
func jitMemory() int64 {
	if n, err := strconv.ParseInt(os.Getenv("STAX_JIT_MEMORY"), 10, 64); err == nil && n > 0 && n <= 1<<20 {
		return n << 20
	}
	return MaxJITMemory
}

// JITBudget is the memory budget every JIT table of the run draws on.
func (r *Resolver) JITBudget() *jit.Budget { return r.jitBudget }

// Version implements agg.Resolver.
func (r *Resolver) Version() uint64 { return r.version.Load() }

// Learned tells the resolver that new symbol knowledge arrived.
func (r *Resolver) Learned() { r.version.Add(1) }

// JIT returns pid's JIT table, creating it.
func (r *Resolver) JIT(pid uint32) *jit.Table {
	if t, ok := r.jits.Load(pid); ok {
		return t.(*jit.Table)
	}
	t, _ := r.jits.LoadOrStore(pid, jit.NewTableWithin(r.jitBudget))
	return t.(*jit.Table)
}

// JITIfAny returns pid's JIT table or nil.
func (r *Resolver) JITIfAny(pid uint32) *jit.Table {
	if t, ok := r.jits.Load(pid); ok {
		return t.(*jit.Table)
	}
	return nil
}

// Generation is the address-space generation of pid at time t: it changes whenever a
// mapping or JIT function that existed before t is replaced, so samples of one stack in one
// generation resolve alike.
func (r *Resolver) Generation(pid uint32, t uint64) uint32 {
	g := r.tracker.Generation(int(pid), t)
	if jt := r.JITIfAny(pid); jt != nil {
		g += uint32(jt.Generation(t))
	}
	return g
}

// ImageErrors lists the images that could not be read, with why.
func (r *Resolver) ImageErrors() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]string, len(r.errors))
	for k, v := range r.errors {
		out[k] = v
	}
	return out
}

// GoInlineNotes says, per Go image whose inline tree could not be trusted and whose frames
// were asked for, how many addresses were named without their inline functions, and why.
func (r *Resolver) GoInlineNotes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var notes []string
	for _, ie := range r.images {
		if ie.im == nil || ie.im.ELF() == nil {
			continue
		}
		if n, why := ie.im.ELF().GoNoInline(); n > 0 {
			notes = append(notes, fmt.Sprintf("Go frames of %s at %d addresses without inline functions: %s", ie.path, n, why))
		}
	}
	sort.Strings(notes)
	return notes
}

// Resolve implements agg.Resolver. Each machine frame's address is the sampled instruction
// for the leaf and, for a caller, its return address minus one (the call instruction),
// which is also what it is named after.
func (r *Resolver) Resolve(pid uint32, t uint64, chain []uint64, out []agg.Site) ([]agg.Site, int, uint64, int) {
	kernel, user := perfrecord.SplitCallchain(chain)
	leafFunc := -1
	var leaf uint64
	unresolved := 0
	for i, addr := range kernel {
		at := addr
		if i == 0 {
			leaf = addr
		} else if at > 0 {
			at-- // a return address: the call is the instruction before it
		}
		f, ok := r.kernelFrame(at, addr)
		if !ok {
			unresolved++
		} else if i == 0 {
			leafFunc = len(out)
		}
		out = append(out, agg.Site{Frame: f, Addr: at, Mapping: agg.Mapping{File: ImageKernel}})
	}
	for i, addr := range user {
		if addr == perfrecord.TruncatedMark {
			out = append(out, agg.Site{Frame: agg.Frame{Func: FuncTruncated, Image: ImageUnknown, Kind: agg.KindUnknown}})
			continue
		}
		lookup := addr
		if i > 0 && lookup > 0 {
			lookup-- // a return address: the call is the instruction before it
		}
		var ok bool
		out, ok = r.userFrames(pid, t, addr, lookup, out)
		if !ok {
			unresolved++
		}
		if len(kernel) == 0 && i == 0 {
			leaf = addr
			if ok {
				leafFunc = len(out) - 1 // the outermost of the leaf's frames
			}
		}
	}
	return out, leafFunc, leaf, unresolved
}

// kernelFrame names the kernel address lookup (addr, for the unnamed: the address sampled).
func (r *Resolver) kernelFrame(lookup, addr uint64) (agg.Frame, bool) {
	r.kernelAsked.Store(true)
	if k, _ := r.syms.Kernel(); k != nil {
		s, ok := k.Lookup(lookup)
		if !ok {
			if k, fresh := r.syms.KernelRefresh(); fresh {
				s, ok = k.Lookup(lookup)
			}
		}
		if ok {
			img := ImageKernel
			if s.Module != "" {
				img = "[" + s.Module + "]"
			}
			return agg.Frame{Func: s.Name, Image: img, Kind: agg.KindKernel}, true
		}
	}
	return agg.Frame{Func: fmt.Sprintf("[unknown] %#x", addr), Image: ImageKernel, Kind: agg.KindUnknown}, false
}

// Persist saves what was decoded of the images' debug info to the symbol cache, so the next
// run on the same binaries starts fast.
func (r *Resolver) Persist() error { return r.syms.Persist() }

// KernelError says why kernel symbols are missing, if any kernel frame needed them.
func (r *Resolver) KernelError() error {
	if !r.kernelAsked.Load() {
		return nil
	}
	_, err := r.syms.Kernel()
	return err
}

// userFrames appends the sites of the user address addr (named after lookup, the address
// itself for the leaf, the call instruction for a caller).
func (r *Resolver) userFrames(pid uint32, t, addr, lookup uint64, out []agg.Site) ([]agg.Site, bool) {
	m := r.tracker.Find(int(pid), lookup, t)
	if m == nil || m.Anonymous() && m.Path != vdso.Name {
		if out, ok := r.jitFrames(pid, t, lookup, out); ok {
			return out, true
		}
		if m == nil {
			return append(out, agg.Site{Frame: agg.Frame{Func: fmt.Sprintf("[unknown] %#x", addr), Image: ImageUnknown, Kind: agg.KindUnknown},
				Addr: lookup}), false
		}
		// Code no file describes was written at run time: it is JIT code with no name.
		img := ImageAnon
		if m.Path != "" && m.Path != "//anon" {
			img = m.Path
		}
		return append(out, agg.Site{Frame: agg.Frame{Func: fmt.Sprintf("[unknown] %#x", addr), Image: img, Kind: agg.KindJIT},
			Addr: lookup, Mapping: agg.Mapping{Pid: pid, File: ImageJIT}}), false
	}
	if m.Deleted() {
		if out, ok := r.jitFrames(pid, t, lookup, out); ok {
			return out, true
		}
	}
	ie := r.image(pid, m)
	path := strings.TrimSuffix(m.Path, " (deleted)")
	base := filepath.Base(path)
	mapping := agg.Mapping{Pid: pid, Start: m.Start, Limit: m.End, Offset: m.Pgoff, File: path, BuildID: ie.hexID(m.BuildID)}
	unknown := func(off uint64) ([]agg.Site, bool) {
		return append(out, agg.Site{Frame: agg.Frame{Func: fmt.Sprintf("%s+%#x", base, off), Image: base, Kind: agg.KindUnknown},
			Addr: lookup, Mapping: mapping}), false
	}
	if ie.err != nil {
		return unknown(lookup - m.Start + m.Pgoff)
	}
	vaddr, ok := ie.im.Translate(symbol.Mapping{Start: m.Start, Len: m.End - m.Start, Pgoff: m.Pgoff}, lookup)
	if !ok {
		return unknown(lookup - m.Start + m.Pgoff)
	}
	key := frameKey{ie, vaddr}
	r.mu.Lock()
	res, hit := r.cache[key]
	r.mu.Unlock()
	if !hit {
		res = r.symbolize(ie.im, base, vaddr)
		r.mu.Lock()
		r.cache[key] = res
		r.mu.Unlock()
	}
	if len(res.frames) == 0 {
		return unknown(vaddr)
	}
	for i, f := range res.frames {
		out = append(out, agg.Site{Frame: f, Line: int(res.lines[i]), Addr: lookup, Mapping: mapping})
	}
	return out, res.named
}

// symbolized is what the chain found for one address of an image.
type symbolized struct {
	frames []agg.Frame // nil: nothing bounds the address
	lines  []int32     // the source line at the address in each frame's function; 0: not known
	named  bool        // false for a function range with no name
}

// symbolize names vaddr in an image: its inline chain (innermost first) and the function
// holding it, with source files and the line at vaddr in each where DWARF or .gopclntab
// has them. Code no symbol names is one frame for the function range of .eh_frame holding
// it, named image+0xSTART after the range's start, so a stripped function's samples add up
// in one row; it stays unnamed.
func (r *Resolver) symbolize(im *symbol.Image, base string, vaddr uint64) symbolized {
	loc := im.Locate(vaddr)
	var frames []agg.Frame
	var lines []int32
	for _, f := range loc.Frames {
		if f.Func == "" {
			continue
		}
		frames = append(frames, agg.Frame{Func: f.Func, Image: base, Kind: agg.KindUser, Inlined: f.Inlined, File: f.File})
		lines = append(lines, int32(f.Line))
	}
	if len(frames) > 0 {
		frames[len(frames)-1].Inlined = false
		return symbolized{frames: frames, lines: lines, named: true}
	}
	if start, _, ok := im.FuncRange(vaddr); ok {
		return symbolized{frames: []agg.Frame{{Func: fmt.Sprintf("%s+%#x", base, start), Image: base, Kind: agg.KindUser}}, lines: []int32{0}}
	}
	return symbolized{}
}

// jitFrames appends the sites of JIT code at addr: the function, the functions inlined into
// it there (innermost first), and the source line its debug info gives for addr, on the
// innermost of them whose file it is.
func (r *Resolver) jitFrames(pid uint32, t, addr uint64, out []agg.Site) ([]agg.Site, bool) {
	jt := r.JITIfAny(pid)
	if jt == nil {
		return out, false
	}
	f, ok := jt.Lookup(addr, t)
	if !ok {
		return out, false
	}
	m := agg.Mapping{Pid: pid, File: ImageJIT}
	file, line, _ := jt.LineAt(f, addr)
	start := len(out)
	for _, in := range jt.InlineChain(f, addr) {
		out = append(out, agg.Site{Frame: agg.Frame{Func: in.Name, Image: ImageJIT, Kind: agg.KindJIT, Inlined: true, File: in.File},
			Addr: addr, Mapping: m})
	}
	fr := agg.Frame{Func: f.Name, Image: ImageJIT, Kind: agg.KindJIT}
	if len(f.Lines) > 0 {
		fr.File, fr.Line = f.Lines[0].File, f.Lines[0].Line
	}
	if name, file, ok := agg.PythonName(f.Name); ok {
		// A CPython trampoline: the Python function NAME (FILE).
		fr.Func, fr.Kind = name, agg.KindPython
		if fr.File == "" {
			fr.File = file
		}
	}
	out = append(out, agg.Site{Frame: fr, Addr: addr, Mapping: m})
	if line > 0 {
		at := start
		for i := start; i < len(out); i++ {
			if out[i].Frame.File == file {
				at = i
				break
			}
		}
		out[at].Line = line
	}
	return out, true
}

// image loads the ELF image behind m once (keyed by build-id, else path and inode; the vdso,
// the same for every process of one kernel and ABI, by its size).
func (r *Resolver) image(pid uint32, m *proc.Mapping) *imageEntry {
	if len(m.BuildID) > 0 {
		// The common case, once per frame of every stack named: looked up by the raw
		// build-id, without making a key.
		r.mu.Lock()
		ie := r.byID[string(m.BuildID)]
		r.mu.Unlock()
		if ie != nil {
			return ie
		}
	}
	key := m.Path + ":" + strconv.FormatUint(m.Ino, 10)
	if len(m.BuildID) > 0 {
		key = fmt.Sprintf("%x", m.BuildID)
	} else if m.Path == vdso.Name {
		key = fmt.Sprintf("%s:%#x", vdso.Name, m.End-m.Start)
	}
	r.mu.Lock()
	ie := r.images[key]
	r.mu.Unlock()
	if ie != nil {
		return ie
	}
	ie = &imageEntry{path: m.Path}
	if m.Path == vdso.Name {
		ie.mem, ie.err = r.vdsoBytes(pid, m)
		if ie.err == nil {
			ie.im, ie.err = r.syms.OpenMemory(vdso.Name, ie.mem)
		}
	} else {
		ie.im, ie.file, ie.err = r.openImage(pid, m)
	}
	if symbol.Transient(ie.err) {
		return ie // out of file descriptors or memory for now: the next stack tries again
	}
	r.mu.Lock()
	if prev := r.images[key]; prev != nil {
		if ie.file != nil {
			ie.file.Close()
		}
		ie = prev
	} else {
		r.images[key] = ie
		if ie.err != nil {
			r.errors[m.Path] = ie.err.Error()
		}
	}
	if len(m.BuildID) > 0 {
		r.byID[string(m.BuildID)] = ie
	}
	r.mu.Unlock()
	return ie
}

// vdsoBytes reads the vdso image mapped at m in pid; when the process is gone, stax's own
// vdso stands in, if its size matches (one kernel maps the same vdso into every process of
// one ABI).
func (r *Resolver) vdsoBytes(pid uint32, m *proc.Mapping) ([]byte, error) {
	b, err := vdso.Read(int(pid), m.Start, m.End)
	if err == nil {
		return b, nil
	}
	if own, serr := vdso.Self(); serr == nil && uint64(len(own)) == m.End-m.Start {
		return own, nil
	}
	return nil, err
}

// openImage loads the image behind a mapping from the file proc.OpenImage finds: the
// process's own (a container's, or one deleted or replaced since it was mapped, while the
// process lives), never one whose build-id or inode is not the mapping's. A file that only
// /proc/PID/map_files or /proc/PID/exe reaches is kept open, and returned, for the image's
// later reads (DWARF is read when first needed, perhaps after the process is gone).
func (r *Resolver) openImage(pid uint32, m *proc.Mapping) (*symbol.Image, *os.File, error) {
	f, err := proc.OpenImage(int(pid), m)
	if err != nil {
		return nil, nil, err
	}
	path := f.Name()
	if path == strings.TrimSuffix(m.Path, " (deleted)") || strings.HasPrefix(path, "/proc/"+strconv.Itoa(int(pid))+"/root/") {
		f.Close()
		f = nil
	} else {
		path = "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	}
	im, err := r.syms.OpenBuildID(path, m.BuildID)
	if f != nil && (err != nil || im.Path != path) {
		f.Close() // the image was already loaded from elsewhere, or could not be
		f = nil
	}
	return im, f, err
}

// hostMachine is the ELF machine of this computer: JIT code runs where it was generated.
func hostMachine() elf.Machine {
	if runtime.GOARCH == "arm64" {
		return elf.EM_AARCH64
	}
	return elf.EM_X86_64
}

// kernelStart is where x86-64 kernel addresses begin.
const kernelStart = 0xffff800000000000

// Package symbol turns sampled instruction addresses into function names
// and source positions for stax.
//
// A [Cache] loads each ELF image once (keyed by its GNU build-id, or by
// path, size and modification time when it has none), merges in the
// symbols of a separate debug file when one can be found locally or
// fetched, and answers lookups with a [Location]: the ELF symbol that
// contains the address (for annotation) and the chain of source [Frame]s,
// innermost inlined function first. With a table cache ([Options.TableCache]),
// an image's finished symbol table and its decoded DWARF are kept there for
// later processes.
//
// The work is split over subpackages: elfsym (ELF symbols, build-id,
// address translation), dwarfline (DWARF lines and inline chains),
// debugfile (separate debug files), debuginfod (download of debug files),
// kallsyms (kernel symbols), demangle (C++ and Rust names) and ehframe (the
// function ranges of .eh_frame, which bound code no symbol names).
package symbol

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/symbol/demangle"
	"github.com/stax-profiler/stax/internal/symbol/dwarfline"
	"github.com/stax-profiler/stax/internal/symbol/ehframe"
	"github.com/stax-profiler/stax/internal/symbol/elfsym"
	"github.com/stax-profiler/stax/internal/symbol/kallsyms"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// Frame is one source-level frame of a resolved address.
type Frame struct {
	Func    string // demangled function name, "" if unknown
	File    string // source file, "" if unknown
	Line    int    // source line, 0 if unknown
	Inlined bool   // this frame was inlined into the next frame
}

// Symbol is the ELF (or kernel) symbol containing an address.
type Symbol struct {
	Name   string // demangled name
	Raw    string // name as found in the symbol table
	Start  uint64 // ELF virtual address of the first byte
	Size   uint64
	Module string // kernel module, "" for images and the core kernel
}

// Location is everything known about one address.
type Location struct {
	VAddr  uint64  // ELF virtual address (the address itself for the kernel)
	Symbol Symbol  // zero when no symbol contains the address
	Frames []Frame // innermost first; nil when nothing is known
}

// Mapping describes where a part of an image is mapped in a process (the
// start, length and page offset of a perf MMAP2 record).
type Mapping = elfsym.Mapping

// DebugFetcher obtains a separate debug file by build-id, for example from
// debuginfod. Fetch returns the path of a local copy.
type DebugFetcher interface {
	Fetch(ctx context.Context, buildID []byte) (string, error)
}

// Options configure a [Cache].
type Options struct {
	// DebugRoot is prepended to /usr/lib/debug when looking for separate
	// debug files; "" means "/".
	DebugRoot string
	// NoDebugFiles disables the search for separate debug files.
	NoDebugFiles bool
	// NoDWARF disables source lines and inline frames.
	NoDWARF bool
	// Fetcher, when set, is asked for debug files that are not found
	// locally.
	Fetcher DebugFetcher
	// Demangler memoizes demangled names; nil uses a process-wide cache.
	Demangler *demangle.Cache
	// RawNames keeps names as they appear in the symbol tables.
	RawNames bool
	// TableCache is a directory where decoded DWARF tables and finished symbol tables are
	// kept by build-id, so later processes need not decode them again; "" for none.
	TableCache string
}

// Image is a loaded ELF image. It is safe for concurrent use.
type Image struct {
	Path      string
	BuildID   []byte
	DebugPath string // separate debug file merged in, "" if none
	DebugErr  error  // why no separate debug file is used, if one was sought

	elf  *elfsym.Image
	opts *Options

	dwOnce sync.Once
	dwDone atomic.Bool // dwOnce has run
	dw     *dwarfline.Table
	dwErr  error
	dwPath string

	mem       []byte  // the image's bytes, for an image read from memory
	file      fileKey // the file it was loaded from, to tell it from a replacement
	rangeOnce sync.Once
	ranges    []ehframe.Range // .eh_frame's function ranges in executable segments
}

// ELF returns the image's symbol data.
func (im *Image) ELF() *elfsym.Image { return im.elf }

// Translate converts a sampled address inside mapping m to the image's
// virtual address.
func (im *Image) Translate(m Mapping, addr uint64) (uint64, bool) {
	return im.elf.MappedToVaddr(m, addr)
}

func (im *Image) name(raw string) string {
	if im.opts.RawNames {
		return raw
	}
	if im.opts.Demangler != nil {
		return im.opts.Demangler.Demangle(raw)
	}
	return demangle.Demangle(raw)
}

// Symbol returns the function symbol containing vaddr.
func (im *Image) Symbol(vaddr uint64) (Symbol, bool) {
	s, ok := im.elf.Lookup(vaddr)
	if !ok {
		return Symbol{}, false
	}
	return Symbol{Name: im.name(s.Name), Raw: s.Name, Start: s.Addr, Size: s.Size}, true
}

// FuncRange returns the function range holding vaddr that the image's .eh_frame describes
// (an FDE's start and end): code no symbol names is still bounded by it. The ranges are
// read on first use, from the file the image was loaded from (unless it has been replaced
// since) or the bytes it was read from.
func (im *Image) FuncRange(vaddr uint64) (start, end uint64, ok bool) {
	im.rangeOnce.Do(im.loadRanges)
	r, ok := ehframe.Find(im.ranges, vaddr)
	return r.Start, r.End, ok
}

func (im *Image) loadRanges() {
	var r io.ReaderAt = bytes.NewReader(im.mem)
	if im.mem == nil {
		f, err := targetfile.Open(im.Path)
		if err != nil {
			return
		}
		defer f.Close()
		ra := targetfile.ReaderAt(f)
		if len(im.BuildID) > 0 {
			if id, err := debugfile.BuildID(ra); err != nil || !bytes.Equal(id, im.BuildID) {
				return
			}
		} else if k, err := statKey(im.Path); err != nil || k != im.file {
			return
		}
		r = ra
	}
	rs, _ := ehframe.Read(r)
	kept := rs[:0]
	for _, x := range rs {
		for _, s := range im.elf.Loads {
			if s.Flags&elf.PF_X != 0 && x.Start >= s.Vaddr && x.End <= s.Vaddr+s.Memsz {
				kept = append(kept, x)
				break
			}
		}
	}
	im.ranges = slices.Clip(kept)
}

// DWARF returns the image's DWARF table, loading it on first use.
func (im *Image) DWARF() (*dwarfline.Table, error) {
	im.dwOnce.Do(func() {
		defer im.dwDone.Store(true)
		if im.opts.NoDWARF || im.dwPath == "" {
			im.dwErr = dwarfline.ErrNoDWARF
			return
		}
		if cached := im.cachedTable(); cached != nil {
			im.dw = cached
			return
		}
		im.dw, im.dwErr = dwarfline.Open(im.dwPath)
	})
	return im.dw, im.dwErr
}

// tableCachePath is where the image's decoded DWARF is kept, "" without a cache or build-id.
func (im *Image) tableCachePath() string {
	if im.opts.TableCache == "" || len(im.BuildID) == 0 {
		return ""
	}
	return filepath.Join(im.opts.TableCache, fmt.Sprintf("%x.dwl", im.BuildID))
}

// cachedTable loads the image's decoded DWARF from the table cache; units it lacks are
// decoded from the DWARF file when first needed. A damaged cache file is ignored.
func (im *Image) cachedTable() *dwarfline.Table {
	p := im.tableCachePath()
	if p == "" {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	dwPath := im.dwPath
	t, err := dwarfline.Import(f, func() (*dwarf.Data, error) {
		full, err := dwarfline.Open(dwPath)
		if err != nil {
			return nil, err
		}
		return full.Data(), nil
	})
	if err != nil {
		return nil
	}
	markUsed(p)
	return t
}

// persist writes the image's decoded DWARF to the table cache when it decoded anything new.
func (im *Image) persist() error {
	p := im.tableCachePath()
	if p == "" || im.dw == nil {
		return nil
	}
	if im.dw.MissedCache() {
		// The cache lacked a unit this run needed, and its DWARF was loaded for it: decode
		// the rest too, so no later run pays for that load again.
		im.dw.DecodeAll()
	}
	if im.dw.Decoded() == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("save symbol cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".dwl-*")
	if err != nil {
		return fmt.Errorf("save symbol cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := im.dw.Export(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("save symbol cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save symbol cache: %w", err)
	}
	return os.Rename(tmp.Name(), p)
}

// Persist saves the decoded DWARF of every image that decoded something new to the table
// cache. Call it when lookups are done (at the end of a recording or a batch).
func (c *Cache) Persist() error {
	c.mu.Lock()
	var ims []*Image
	for _, e := range c.byKey {
		select {
		case <-e.done:
			if e.im != nil && e.err == nil {
				ims = append(ims, e.im)
			}
		default:
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, im := range ims {
		if !im.dwDone.Load() {
			continue // never asked for lines: nothing to save
		}
		if err := im.persist(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Frames returns the source frames for vaddr, innermost first.
func (im *Image) Frames(vaddr uint64) []Frame {
	return im.Locate(vaddr).Frames
}

// Locate resolves vaddr to its symbol and frames.
func (im *Image) Locate(vaddr uint64) Location {
	loc := Location{VAddr: vaddr}
	sym, hasSym := im.Symbol(vaddr)
	if hasSym {
		loc.Symbol = sym
	}
	if dw, err := im.DWARF(); err == nil {
		if dfr, err := dw.Frames(vaddr); err == nil && len(dfr) > 0 {
			loc.Frames = make([]Frame, len(dfr))
			for i, f := range dfr {
				loc.Frames[i] = Frame{Func: im.name(f.Func), File: RemapRust(f.File), Line: f.Line, Inlined: f.Inlined}
			}
			// The symbol table names the outermost function more
			// fully (C++ parameters, clone suffixes).
			if last := &loc.Frames[len(loc.Frames)-1]; hasSym {
				last.Func = sym.Name
			}
			return loc
		}
	}
	if gfr, ok := im.elf.GoFrames(vaddr); ok {
		loc.Frames = make([]Frame, len(gfr))
		for i, f := range gfr {
			loc.Frames[i] = Frame{Func: f.Func, File: f.File, Line: f.Line, Inlined: f.Inlined}
		}
		if hasSym {
			loc.Frames[len(loc.Frames)-1].Func = sym.Name
		}
		return loc
	}
	if hasSym {
		loc.Frames = []Frame{{Func: sym.Name}}
	}
	return loc
}

// Cache loads images once and shares them. It is safe for concurrent use.
type Cache struct {
	opts Options

	mu     sync.Mutex
	byKey  map[string]*entry
	byFile map[fileKey]*entry

	kernelOnce sync.Once
	kernelMu   sync.Mutex // guards kernel once loaded, for KernelRefresh
	kernel     *kallsyms.Table
	kernelErr  error
	refreshed  bool // KernelRefresh read the text once
}

type entry struct {
	done chan struct{}
	im   *Image
	err  error
}

// NewCache returns an empty cache.
func NewCache(opts Options) *Cache {
	return &Cache{opts: opts, byKey: map[string]*entry{}, byFile: map[fileKey]*entry{}}
}

// Len returns the number of distinct images (including failed loads).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// Transient reports whether err is a shortage of the moment (no file
// descriptor or memory free, an interrupted call) rather than a fact about
// the file: such a failure is not remembered, and the next use tries again.
func Transient(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EAGAIN)
}

// Open returns the image at path, loading it on first use. A failed load
// is remembered and its error returned again, unless it is Transient.
func (c *Cache) Open(path string) (*Image, error) {
	fk, statErr := statKey(path)
	if statErr != nil {
		return c.get("missing:"+path, func() (*Image, error) {
			return nil, fmt.Errorf("open image: %w", statErr)
		})
	}
	c.mu.Lock()
	e := c.byFile[fk]
	c.mu.Unlock()
	if e != nil {
		<-e.done
		return e.im, e.err
	}
	key := "file:" + fk.String()
	id, err := debugfile.ReadBuildID(path)
	if err == nil {
		key = fmt.Sprintf("build-id:%x", id)
	}
	im, err := c.get(key, func() (*Image, error) { return c.load(path, id) })
	if Transient(err) {
		return im, err
	}
	c.mu.Lock()
	if c.byFile[fk] == nil {
		c.byFile[fk] = c.byKey[key]
	}
	c.mu.Unlock()
	return im, err
}

// OpenBuildID returns the image with the given build-id, as reported by
// a perf MMAP2 record, loading it from path when it is not cached yet. A
// file at path whose build-id differs is an error.
func (c *Cache) OpenBuildID(path string, buildID []byte) (*Image, error) {
	if len(buildID) > 0 {
		c.mu.Lock()
		e := c.byKey[fmt.Sprintf("build-id:%x", buildID)]
		c.mu.Unlock()
		if e != nil {
			<-e.done
			return e.im, e.err
		}
	}
	im, err := c.Open(path)
	if err != nil {
		return nil, err
	}
	if len(buildID) > 0 && !bytes.Equal(im.BuildID, buildID) {
		return nil, fmt.Errorf("open image %s: build-id %x, want %x (file replaced?)", path, im.BuildID, buildID)
	}
	return im, nil
}

// OpenMemory returns the image whose bytes are data (the vdso, which no file holds), keyed
// by its build-id, else by name and contents; name stands in for its path in messages. A
// separate debug file is sought by build-id as for files. data must not be modified.
func (c *Cache) OpenMemory(name string, data []byte) (*Image, error) {
	el, err := elfsym.Load(bytes.NewReader(data), name)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("mem:%s:%x", name, sha256.Sum256(data))
	if len(el.BuildID) > 0 {
		key = fmt.Sprintf("build-id:%x", el.BuildID)
	}
	return c.get(key, func() (*Image, error) {
		im := &Image{Path: name, BuildID: el.BuildID, elf: el, opts: &c.opts, mem: data}
		if !c.opts.NoDebugFiles && !el.HasDWARF && len(el.BuildID) > 0 {
			if dbg, _, err := c.findDebug(el, nil); err != nil {
				im.DebugErr = err
			} else if d, err := elfsym.Open(dbg); err != nil {
				im.DebugErr = err
			} else {
				el.Merge(d)
				im.DebugPath = dbg
				if d.HasDWARF {
					im.dwPath = dbg
				}
			}
		}
		return im, nil
	})
}

// Resolve translates addr, sampled inside mapping m of the image at path,
// and resolves it.
func (c *Cache) Resolve(path string, m Mapping, addr uint64) (Location, error) {
	im, err := c.Open(path)
	if err != nil {
		return Location{}, err
	}
	va, ok := im.Translate(m, addr)
	if !ok {
		return Location{}, fmt.Errorf("translate address %#x in %s: offset %#x is outside every loadable segment", addr, path, m.FileOffset(addr))
	}
	return im.Locate(va), nil
}

// get returns the entry for key, running load once.
func (c *Cache) get(key string, load func() (*Image, error)) (*Image, error) {
	c.mu.Lock()
	e := c.byKey[key]
	if e == nil {
		e = &entry{done: make(chan struct{})}
		c.byKey[key] = e
		c.mu.Unlock()
		func() {
			defer close(e.done)
			e.im, e.err = load()
		}()
		if Transient(e.err) {
			c.mu.Lock()
			delete(c.byKey, key)
			c.mu.Unlock()
		}
		return e.im, e.err
	}
	c.mu.Unlock()
	<-e.done
	return e.im, e.err
}

// load loads the image at path, whose build-id is id (nil if it has none): from the table
// cache when it holds the table of this file made with the debug file that would be
// merged now, else by parsing it, and then saves its table there.
func (c *Cache) load(path string, id []byte) (*Image, error) {
	var pick *debugPick
	if st := c.readSymCache(path, id); st != nil {
		d := c.pickDebug(st.el, st.meta.has(metaOwnDWARF), &st.meta)
		if im := c.fromSaved(path, st, d); im != nil {
			return im, nil
		}
		st.drop()
		pick = &d // the same file: its debug file need not be sought again
	}
	self, statErr := statKey(path) // before parsing: a change while parsing is seen next time
	el, err := elfsym.Open(path)
	if err != nil {
		return nil, err
	}
	im := &Image{Path: path, BuildID: el.BuildID, elf: el, opts: &c.opts}
	if len(el.BuildID) == 0 {
		im.file, _ = statKey(path)
	}
	meta := symMeta{image: self}
	save := statErr == nil && !el.IsGo
	if mini, err := miniDebugInfo(path); err != nil {
		im.DebugErr = err
		save = false
	} else if mini != nil {
		el.Merge(mini)
		meta.flags |= metaMini
	}
	if el.HasDWARF {
		im.dwPath = path
		meta.flags |= metaOwnDWARF
	}
	if !c.opts.NoDebugFiles && !el.HasDWARF {
		if pick == nil || !pick.sought {
			d := c.pickDebug(el, false, nil)
			pick = &d
		}
		if pick.err == nil {
			dst, serr := statKey(pick.path)
			d, lerr := elfsym.Open(pick.path)
			if lerr != nil {
				im.DebugErr = lerr
				save = false
			} else {
				el.Merge(d)
				im.DebugPath = pick.path
				meta.flags |= metaDebug
				meta.debug = dst
				if d.HasDWARF {
					im.dwPath = pick.path
					meta.flags |= metaDebugDWARF
				}
				if pick.fetched {
					meta.flags |= metaFetched
				}
				save = save && serr == nil && !el.IsGo
			}
		} else {
			im.DebugErr = pick.err
		}
	}
	if save {
		c.saveSymCache(el, meta)
	}
	return im, nil
}

// debugPick is the outcome of the search for an image's separate debug file.
type debugPick struct {
	sought  bool   // the image needs one (it has no DWARF, and debug files are wanted)
	path    string // the file found
	fetched bool   // from the Fetcher
	err     error  // why none was found
}

// pickDebug seeks el's separate debug file unless ownDWARF or the options say none is
// wanted. saved is the record of a saved table of el, or nil: when it says a fetched file
// was merged and that file is still there, unchanged, it is taken again without asking
// the Fetcher, which keeps what it fetched by build-id.
func (c *Cache) pickDebug(el *elfsym.Image, ownDWARF bool, saved *symMeta) debugPick {
	if c.opts.NoDebugFiles || ownDWARF {
		return debugPick{}
	}
	var fetchedBefore *fileKey
	if saved != nil && saved.has(metaFetched) {
		fetchedBefore = &saved.debug
	}
	p, fetched, err := c.findDebug(el, fetchedBefore)
	return debugPick{sought: true, path: p, fetched: fetched, err: err}
}

// fromSaved is the image at path from its saved table st when d, the debug file sought
// now, is the one st was made with, unchanged; else nil.
func (c *Cache) fromSaved(path string, st *savedTable, d debugPick) *Image {
	m := st.meta
	if d.sought && d.err == nil {
		if !m.has(metaDebug) || d.fetched != m.has(metaFetched) {
			return nil
		}
		if now, err := statKey(d.path); err != nil || !now.sameFile(m.debug) {
			return nil
		}
	} else if m.has(metaDebug) {
		return nil
	}
	im := &Image{Path: path, BuildID: st.el.BuildID, elf: st.el, opts: &c.opts}
	if m.has(metaOwnDWARF) {
		im.dwPath = path
	}
	if m.has(metaDebug) {
		im.DebugPath = d.path
		if m.has(metaDebugDWARF) {
			im.dwPath = d.path
		}
	}
	if d.sought {
		im.DebugErr = d.err
	}
	return im
}

// findDebug finds el's separate debug file locally, else from the Fetcher, and says
// whether it was fetched. fetchedBefore, when not nil, is a file the Fetcher gave for el
// before: if it is still there, unchanged, it is taken without asking again.
func (c *Cache) findDebug(el *elfsym.Image, fetchedBefore *fileKey) (string, bool, error) {
	q := debugfile.Query{Path: el.Path, BuildID: el.BuildID, DebugLink: el.DebugLink, DebugLinkCRC: el.DebugLinkCRC}
	p, err := debugfile.Finder{Root: c.opts.DebugRoot}.Find(q)
	if err == nil || c.opts.Fetcher == nil || len(el.BuildID) == 0 {
		return p, false, err
	}
	if fetchedBefore != nil {
		if now, serr := statKey(fetchedBefore.path); serr == nil && now.sameFile(*fetchedBefore) {
			return now.path, true, nil
		}
	}
	p, ferr := c.opts.Fetcher.Fetch(context.Background(), el.BuildID)
	if ferr != nil {
		return "", false, errors.Join(err, ferr)
	}
	return p, true, nil
}

// Kernel returns the kernel symbol table from /proc/kallsyms, loaded once (from the table
// cache's copy, when there is a cache and it was saved for the running kernel).
func (c *Cache) Kernel() (*kallsyms.Table, error) {
	c.kernelOnce.Do(func() {
		t, err := kallsyms.LoadCached(kallsyms.DefaultPath, c.opts.TableCache)
		c.kernelMu.Lock()
		c.kernel, c.kernelErr = t, err
		c.kernelMu.Unlock()
	})
	c.kernelMu.Lock()
	defer c.kernelMu.Unlock()
	return c.kernel, c.kernelErr
}

// KernelRefresh reads /proc/kallsyms again when the table in use came from the cache's
// copy, which lacks what was loaded since it was saved (a BPF program, a module): call it
// when an address is not found. It does so once per cache, and reports whether it did.
func (c *Cache) KernelRefresh() (*kallsyms.Table, bool) {
	k, _ := c.Kernel()
	c.kernelMu.Lock()
	defer c.kernelMu.Unlock()
	if k == nil || !k.FromCache() || c.refreshed {
		return c.kernel, false
	}
	c.refreshed = true
	t, err := kallsyms.Reload(kallsyms.DefaultPath, c.opts.TableCache)
	if err != nil {
		return c.kernel, false
	}
	c.kernel = t
	return t, true
}

// KernelLocation resolves a kernel address with table t. The frame's
// function carries the module in brackets, as perf prints it.
func KernelLocation(t *kallsyms.Table, addr uint64) Location {
	loc := Location{VAddr: addr}
	s, ok := t.Lookup(addr)
	if !ok {
		return loc
	}
	loc.Symbol = Symbol{Name: s.Name, Raw: s.Name, Start: s.Addr, Size: s.End() - s.Addr, Module: s.Module}
	loc.Frames = []Frame{{Func: s.String()}}
	return loc
}

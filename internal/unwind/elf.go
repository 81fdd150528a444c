package unwind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/stax-profiler/stax/internal/targetfile"
)

// LoadELF reads the call-frame information of an ELF image: .eh_frame, else .debug_frame
// (which a separate debug file may hold; pass it as debugPath, or "").
func LoadELF(path, debugPath string) (*Table, error) {
	f, err := targetfile.OpenELF(path)
	if err != nil {
		return nil, fmt.Errorf("open image for unwinding: %w", err)
	}
	defer f.Close()
	return loadELF(f.File, path, debugPath)
}

func loadELF(f *elf.File, path, debugPath string) (*Table, error) {
	var t *Table
	if s := f.Section(".eh_frame"); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
		data, err := readSection(s)
		if err != nil {
			return nil, fmt.Errorf("read .eh_frame of %s: %w", path, err)
		}
		if t, err = ParseEHFrame(data, s.Addr); err != nil {
			return nil, fmt.Errorf("parse .eh_frame of %s: %w", path, err)
		}
	}
	if t == nil || len(t.fdes) == 0 {
		dt, err := loadDebugFrame(f)
		if err == nil && dt != nil {
			t = dt
		} else if debugPath != "" {
			if df, err := targetfile.OpenELF(debugPath); err == nil {
				dt, _ = loadDebugFrame(df.File)
				df.Close()
				if dt != nil {
					t = dt
				}
			}
		}
	}
	if t == nil {
		t = &Table{Complete: true}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			t.loads = append(t.loads, segment{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz})
		}
	}
	t.setEntry(f)
	t.setGoTops(f)
	return t, nil
}

// goTops are the Go runtime's functions marked TOPFRAME (its own traceback ends at them):
// the outermost frame of the runtime's thread start (mstart), of every goroutine (goexit)
// and of the process (rt0_go). Above mstart lies runtime.clone, whose caller is what the
// thread's stack holds above its top: garbage, or memory the stack copy does not have.
var goTops = map[string]bool{"runtime.mstart": true, "runtime.mstart.abi0": true, "runtime.goexit": true,
	"runtime.goexit.abi0": true, "runtime.rt0_go": true, "runtime.rt0_go.abi0": true}

// setGoTops finds goTops in a Go program's symbol table.
func (t *Table) setGoTops(f *elf.File) {
	if f.Section(".gopclntab") == nil && f.Section(".go.buildinfo") == nil {
		return
	}
	syms, err := f.Symbols()
	if err != nil {
		return
	}
	for _, s := range syms {
		if goTops[s.Name] && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && len(t.tops) < len(goTops) {
			t.tops = append(t.tops, span{s.Value, s.Value + s.Size})
		}
	}
}

// setEntry records the code at the image's entry point when no FDE describes it, as with
// the dynamic loader's _start (it calls _dl_start, then _dl_init, with no call-frame
// information) or musl's: from the entry point to the next function an FDE describes,
// within the executable segment. The kernel jumps there; nothing calls it.
func (t *Table) setEntry(f *elf.File) {
	e := f.Entry
	if e == 0 || !t.Complete || len(t.fdes) == 0 {
		return
	}
	if _, ok := t.find(e); ok {
		return
	}
	i := sort.Search(len(t.fdes), func(i int) bool { return t.fdes[i].start > e })
	if i == len(t.fdes) {
		return
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && e >= p.Vaddr && e-p.Vaddr < p.Filesz {
			t.entry, t.entryEnd = e, min(t.fdes[i].start, p.Vaddr+p.Filesz)
			return
		}
	}
}

func loadDebugFrame(f *elf.File) (*Table, error) {
	s := f.Section(".debug_frame")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	data, err := readSection(s)
	if err != nil {
		return nil, err
	}
	return ParseDebugFrame(data)
}

func readSection(s *elf.Section) ([]byte, error) {
	if s.Size > maxCFISection {
		return nil, fmt.Errorf("section of %d bytes is over the %d limit", s.Size, maxCFISection)
	}
	// One read of the known size: growing a buffer from a section reader costs a large
	// section (node's 2.7 MB .eh_frame) tens of reads and copies.
	b := make([]byte, s.Size)
	if _, err := io.ReadFull(s.Open(), b); err != nil {
		return nil, err
	}
	return b, nil
}

// FileLoader loads and caches Tables by build-id (or path and inode when there is none).
// It is safe for concurrent use: an image is loaded once, and while it loads (tens of
// milliseconds for a large one) lookups of other images go on.
type FileLoader struct {
	// Root stands in for "/" in mapping paths (e.g. /proc/PID/root); "" means the host.
	Root string
	// Open, if set, opens the file to read the image mapped at m in process pid from (a
	// container's file, a deleted one...) instead of Root+path; it must refuse a file that
	// is not the mapped one. The loader closes it.
	Open func(pid int, m Mapping) (*os.File, error)
	mu   sync.Mutex
	byID map[string]*loadedTable // guarded by mu
}

// loadedTable is an image's table once ready is closed; a nil t remembers a failure.
type loadedTable struct {
	ready chan struct{}
	t     *Table
}

// Table returns the call-frame information for the image behind m, or nil.
func (l *FileLoader) Table(m Mapping) *Table { return l.TableOf(0, m) }

// TableOf returns the call-frame information for the image behind m in process pid, or nil.
func (l *FileLoader) TableOf(pid int, m Mapping) *Table {
	if m.Path == "[vdso]" {
		t, _ := VDSOTable()
		return t
	}
	key := m.BuildID
	if key == "" {
		key = "path:" + m.Path + ":" + strconv.FormatUint(m.Ino, 10)
	}
	l.mu.Lock()
	if e, ok := l.byID[key]; ok {
		l.mu.Unlock()
		<-e.ready
		return e.t
	}
	if l.byID == nil {
		l.byID = map[string]*loadedTable{}
	}
	e := &loadedTable{ready: make(chan struct{})}
	l.byID[key] = e
	l.mu.Unlock()
	e.t = l.load(pid, m)
	close(e.ready)
	return e.t
}

func (l *FileLoader) load(pid int, m Mapping) *Table {
	if l.Open == nil {
		t, _ := LoadELF(l.Root+m.Path, "")
		return t
	}
	f, err := l.Open(pid, m)
	if err != nil {
		return nil
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil
	}
	t, _ := loadELF(ef, f.Name(), "")
	return t
}

// Maps is a ProcessView over a fixed list of mappings (a snapshot of /proc/PID/maps, or
// mappings rebuilt from MMAP2 records) and a loader of Tables.
type Maps struct {
	Mappings []Mapping // sorted by Start, not overlapping
	Loader   interface{ Table(Mapping) *Table }
}

// Mapping returns the mapping holding addr.
func (p *Maps) Mapping(addr uint64) (Mapping, bool) {
	i := sort.Search(len(p.Mappings), func(i int) bool { return p.Mappings[i].End > addr })
	if i < len(p.Mappings) && p.Mappings[i].Start <= addr {
		return p.Mappings[i], true
	}
	return Mapping{}, false
}

// Table returns the Table of m's image through the loader.
func (p *Maps) Table(m Mapping) *Table {
	if p.Loader == nil {
		return nil
	}
	return p.Loader.Table(m)
}

// MaxMapsBytes bounds what is read of a /proc/PID/maps file.
const MaxMapsBytes = 64 << 20

// ReadMaps reads the executable mappings of a process from /proc/PID/maps.
func ReadMaps(pid int) ([]Mapping, error) {
	data, err := targetfile.ReadFile("/proc/"+strconv.Itoa(pid)+"/maps", MaxMapsBytes)
	if err != nil {
		return nil, fmt.Errorf("read mappings: %w", err)
	}
	var ms []Mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 || !strings.Contains(fs[1], "x") {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(fs[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		m := Mapping{Start: start, End: end, Offset: off, Exec: true}
		if len(fs) >= 6 {
			m.Path = strings.Join(fs[5:], " ")
		}
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Start < ms[j].Start })
	return ms, sc.Err()
}

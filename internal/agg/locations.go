package agg

import (
	"encoding/binary"
	"fmt"
)

// A profile is modelled as pprof's is: a stack is a sequence of locations, leaf first; a
// location is one machine frame (an instruction address in a mapping) and the source lines
// it stands for, innermost inlined function first; a line names a function (a Frame) and a
// line in it. Views that count functions expand each location into its functions; views
// by source line or by address read the lines and addresses themselves.

// Mapping is a range of a process's address space holding code from one place (pprof's
// Mapping): a segment of an image file, the process's JIT code, or the kernel.
type Mapping struct {
	Pid    uint32 `json:"pid,omitempty"`
	Start  uint64 `json:"start,omitempty"`
	Limit  uint64 `json:"limit,omitempty"`  // one past the last byte; 0: not known (JIT code, the kernel)
	Offset uint64 `json:"offset,omitempty"` // the file offset mapped at Start
	// File is the image's path, or [jit], [kernel.kallsyms], [vdso].
	File    string `json:"file"`
	BuildID string `json:"build_id,omitempty"` // hex
}

// Location is one machine frame of a stack (pprof's Location): an instruction address and
// the source lines it stands for, innermost inlined function first; the last is the
// function the code belongs to. Every location has at least one line.
//
// Addr is the sampled instruction for a stack's leaf and, for a caller, its return address
// minus one: a byte of the call instruction, as pprof and addr2line take it (so a caller's
// line is the call's, and pprof -disasm puts the samples on the call). It is 0 in runs
// saved before stax kept addresses.
type Location struct {
	Addr    uint64 `json:"addr"`
	Mapping uint32 `json:"mapping,omitempty"` // Profile.Mappings index + 1; 0: not known
	Lines   []Line `json:"lines"`
}

// Line is one level of a location's inline chain: a function and the source line in it.
type Line struct {
	Func uint32 `json:"func"`           // frame id
	Line int32  `json:"line,omitempty"` // 0: not known
}

// Leaf is the innermost function of the location (where its samples land).
func (l *Location) Leaf() uint32 { return l.Lines[0].Func }

// Outer is the function the location's code belongs to (its outermost line).
func (l *Location) Outer() uint32 { return l.Lines[len(l.Lines)-1].Func }

// Site is one frame of a resolved stack, as a Resolver gives it: a function, the source line
// in it, and where the machine frame it belongs to is. The sites of one machine frame (the
// functions inlined into one another, innermost first, then the function they are inlined
// into) are consecutive, share Addr and Mapping, and all but the last have Frame.Inlined set.
type Site struct {
	Frame   Frame
	Line    int     // source line at Addr in Frame's function; 0: not known
	Addr    uint64  // see Location.Addr
	Mapping Mapping // zero: not known
}

// lineOf is a source line as a Line keeps it: what is not a line (.gopclntab gives -1 for
// code with none) is 0, not known.
func lineOf(n int) int32 {
	if n <= 0 || n > 1<<31-1 {
		return 0
	}
	return int32(n)
}

// machineFrame returns the end (exclusive) of the machine frame that starts at sites[i].
func machineFrame(sites []Site, i int) int {
	j := i
	for j < len(sites)-1 && sites[j].Frame.Inlined && sites[j+1].Addr == sites[i].Addr {
		j++
	}
	return j + 1
}

// AppendFrames appends the functions of stack sid to buf, leaf first, each inlined function
// before the function it is inlined into.
func (p *Profile) AppendFrames(buf []uint32, sid uint32) []uint32 {
	if len(p.FrameStacks) == len(p.Stacks) {
		return append(buf, p.FrameStacks[sid]...)
	}
	for _, lid := range p.Stacks[sid] {
		for _, ln := range p.Locations[lid].Lines {
			buf = append(buf, ln.Func)
		}
	}
	return buf
}

// ExpandStacks sets FrameStacks from Stacks and Locations.
func (p *Profile) ExpandStacks() { p.FrameStacks = p.expandStacks() }

// manyLines stands, in a location's single function, for a location of several lines.
const manyLines = ^uint32(0)

// singleFuncs is each location's function when it has one line (most have), else
// manyLines: a compact table that a pass over every stack reads far faster than the
// locations themselves.
func (p *Profile) singleFuncs() (one []uint32, many bool) {
	one = make([]uint32, len(p.Locations))
	for i := range p.Locations {
		if l := p.Locations[i].Lines; len(l) == 1 {
			one[i] = l[0].Func
		} else {
			one[i], many = manyLines, true
		}
	}
	return one, many
}

// FrameCount is the number of functions in all stacks together (what ExpandStacks makes),
// not counting ids of locations that do not exist.
func (p *Profile) FrameCount() int64 {
	one, many := p.singleFuncs()
	return p.frameCount(one, many)
}

func (p *Profile) frameCount(one []uint32, many bool) int64 {
	var n int64
	for _, st := range p.Stacks {
		if !many {
			n += int64(len(st))
			continue
		}
		for _, lid := range st {
			switch {
			case int(lid) >= len(one):
			case one[lid] != manyLines:
				n++
			default:
				n += int64(len(p.Locations[lid].Lines))
			}
		}
	}
	return n
}

func (p *Profile) expandStacks() [][]uint32 {
	one, many := p.singleFuncs()
	all := make([]uint32, 0, p.frameCount(one, many))
	out := make([][]uint32, len(p.Stacks))
	for i, st := range p.Stacks {
		at := len(all)
		for _, lid := range st {
			if f := one[lid]; f != manyLines {
				all = append(all, f)
				continue
			}
			for _, ln := range p.Locations[lid].Lines {
				all = append(all, ln.Func)
			}
		}
		out[i] = all[at:len(all):len(all)]
	}
	return out
}

// FuncStacks returns FrameStacks, or, when they were not derived, their expansion made for
// the caller alone.
func (p *Profile) FuncStacks() [][]uint32 {
	if len(p.FrameStacks) == len(p.Stacks) {
		return p.FrameStacks
	}
	return p.expandStacks()
}

// LeafFrame is the innermost function of stack sid's leaf: where its samples landed.
func (p *Profile) LeafFrame(sid uint32) (uint32, bool) {
	st := p.Stacks[sid]
	if len(st) == 0 {
		return 0, false
	}
	return p.Locations[st[0]].Leaf(), true
}

// SingleLineLocations says whether every location has exactly one line (no inlining): a
// location's function is then its Leaf, and a stack has as many functions as locations.
func (p *Profile) SingleLineLocations() bool {
	for i := range p.Locations {
		if len(p.Locations[i].Lines) != 1 {
			return false
		}
	}
	return true
}

// LocateFrameStacks turns p.Stacks from stacks of frame ids (runs saved before stax kept
// locations, profiles built by hand) into stacks of locations: one location per machine
// frame (inlined frames with the function they are inlined into), with address 0 and each
// frame's own line. p.Locations and p.FrameStacks are replaced.
func (p *Profile) LocateFrameStacks() {
	p.FrameStacks = make([][]uint32, len(p.Stacks))
	copy(p.FrameStacks, p.Stacks)
	index := map[string]uint32{}
	p.Locations = nil
	var key []byte
	all := 0
	for _, s := range p.Stacks {
		all += len(s)
	}
	ids := make([]uint32, 0, all)
	for i, s := range p.Stacks {
		start := len(ids)
		for lo := 0; lo < len(s); {
			hi := lo
			for hi < len(s)-1 && int(s[hi]) < len(p.Frames) && p.Frames[s[hi]].Inlined {
				hi++
			}
			key = key[:0]
			for _, id := range s[lo : hi+1] {
				key = binary.LittleEndian.AppendUint32(key, id)
			}
			lid, ok := index[string(key)]
			if !ok {
				lid = uint32(len(p.Locations))
				index[string(key)] = lid
				loc := Location{Lines: make([]Line, 0, hi+1-lo)}
				for _, id := range s[lo : hi+1] {
					ln := Line{Func: id}
					if int(id) < len(p.Frames) {
						ln.Line = lineOf(p.Frames[id].Line)
					}
					loc.Lines = append(loc.Lines, ln)
				}
				p.Locations = append(p.Locations, loc)
			}
			ids = append(ids, lid)
			lo = hi + 1
		}
		p.Stacks[i] = ids[start:len(ids):len(ids)]
	}
}

// locationTable interns locations: the sequence (address, mapping, then each line as
// frame id << 32 | line) identifies one.
type locationTable struct {
	seqs *StackTable
	buf  []uint64
}

func newLocationTable() *locationTable { return &locationTable{seqs: NewStackTable()} }

func (t *locationTable) intern(addr uint64, mapping uint32, lines []Line) uint32 {
	t.buf = append(t.buf[:0], addr, uint64(mapping))
	for _, ln := range lines {
		t.buf = append(t.buf, uint64(ln.Func)<<32|uint64(uint32(ln.Line)))
	}
	return t.seqs.Intern(t.buf)
}

// locations returns the table's locations, their lines in one block.
func (t *locationTable) locations() []Location {
	out, _ := t.locationsInto(nil, nil)
	return out
}

// locationsInto is locations built in out and lines (both empty), returned for reuse.
func (t *locationTable) locationsInto(out []Location, lines []Line) ([]Location, []Line) {
	n := t.seqs.Len()
	out = resize(out, n)
	lines = resize(lines, len(t.seqs.data)-2*n)[:0]
	for i := range out {
		s := t.seqs.Get(uint32(i))
		at := len(lines)
		for _, v := range s[2:] {
			lines = append(lines, Line{Func: uint32(v >> 32), Line: int32(uint32(v))})
		}
		out[i] = Location{Addr: s[0], Mapping: uint32(s[1]), Lines: lines[at:len(lines):len(lines)]}
	}
	return out, lines
}

// CheckIndexes returns an error for the first index of p that names nothing: a location
// without lines, or naming a frame or mapping p lacks; a stack naming a location; an entry
// naming a stack or leaf frame. A profile read from a file or built by hand is checked so
// that a damaged one gives an error, never a panic in a view.
func (p *Profile) CheckIndexes() error {
	nf := uint32(len(p.Frames))
	for i := range p.Locations {
		l := &p.Locations[i]
		if len(l.Lines) == 0 {
			return fmt.Errorf("location %d has no lines", i)
		}
		if int(l.Mapping) > len(p.Mappings) {
			return fmt.Errorf("location %d names mapping %d of %d", i, l.Mapping, len(p.Mappings))
		}
		for _, ln := range l.Lines {
			if ln.Func >= nf {
				return fmt.Errorf("location %d names frame %d of %d", i, ln.Func, nf)
			}
		}
	}
	nl := uint32(len(p.Locations))
	for i, s := range p.Stacks {
		for _, id := range s {
			if id >= nl {
				return fmt.Errorf("stack %d names location %d of %d", i, id, nl)
			}
		}
	}
	for i, e := range p.Entries {
		if e.Stack >= uint32(len(p.Stacks)) {
			return fmt.Errorf("entry %d names stack %d of %d", i, e.Stack, len(p.Stacks))
		}
		if e.LeafFunc >= int32(nf) || e.LeafFunc < -1 {
			return fmt.Errorf("entry %d names frame %d of %d", i, e.LeafFunc, nf)
		}
	}
	return nil
}

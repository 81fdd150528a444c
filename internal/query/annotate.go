package query

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/disasm"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/symbol/debuginfod"
	"github.com/stax-profiler/stax/internal/symconf"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// ErrNoMatch says the annotate target names no sampled function or known code.
var ErrNoMatch = errors.New("no match")

// AnnotateOptions are the flags of `stax annotate`.
type AnnotateOptions struct {
	Target string // 0xADDR or a case-insensitive substring of a function name (a top row)
	Tid    uint32
	Intel  bool
	// Version picks one of the function's code versions by its index (1-based, as
	// AnnotateResult.Versions lists them); 0: the hottest, or the one holding an address.
	Version int
}

// AnnotateResult is the answer of `stax annotate`; its JSON document is api.Annotate
// (AnnotateDoc).
type AnnotateResult struct {
	Schema     int                  `json:"schema"`
	Run        string               `json:"run"`
	Annotation *annotate.Annotation `json:"annotation"`
	Others     []Match              `json:"other_matches,omitempty"`
	Notes      []string             `json:"notes,omitempty"` // why source lines are missing
	// Versions lists every piece of code the function had (a JIT compiles a function
	// again; other code reuses an address), oldest first; Version is the index of the one
	// annotated.
	Versions []CodeVersion `json:"versions,omitempty"`
	Version  int           `json:"version,omitempty"`
	// Inlined is set when the target is a function inlined into the one annotated.
	Inlined *InlinedTarget `json:"inlined,omitempty"`
	// Warning says why the annotated bytes may not be the code that ran.
	Warning string `json:"warning,omitempty"`
	// Window is the part of the run whose samples count (--from/--to, --span); nil: all.
	Window *api.Window `json:"window,omitempty"`
}

// CodeVersion is one piece of a function's code.
type CodeVersion struct {
	Index   int      `json:"index"` // 1-based
	Start   uint64   `json:"start"`
	Size    uint64   `json:"size"`
	LoadSec *float64 `json:"load_sec,omitempty"` // load time, seconds from the run's start (JIT code)
	Samples uint64   `json:"samples"`
	Percent float64  `json:"percent"` // of the function's samples
	Error   string   `json:"error,omitempty"`
}

// InlinedTarget describes an inlined target: its samples are marked in the code of the
// function it was inlined into.
type InlinedTarget struct {
	Func    string `json:"func"`
	Into    string `json:"into"`
	Samples uint64 `json:"samples"` // of the target, in the annotated version
}

// Match is a function matching the target.
type Match struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Samples uint64 `json:"samples"`
}

const (
	maxSourceFile  = 16 << 20
	maxSourceLines = 1 << 20
)

// Annotate answers `stax annotate`. It accepts whatever top lists: a function (each of its
// code versions counted apart), a function inlined into another (annotated in the code it
// was inlined into), an image+0xOFF or [unknown] 0xADDR row (the bytes kept around it).
//
// It goes in steps: find the target, find the code holding it, divide the samples among
// that code's versions, pick one, read and disassemble it with its samples and source
// lines, and assemble the answer.
func Annotate(run *store.Run, o AnnotateOptions) (*AnnotateResult, error) {
	p := &run.Profile
	lf := leafFrames{p}
	t, err := findTarget(run, lf, o)
	if err != nil {
		return nil, err
	}
	codeF, focus, err := codeFrameOf(lf, t.frame, o.Tid)
	if err != nil {
		return nil, err
	}
	f := p.Frames[codeF]
	vs := versionsOf(run, uint32(codeF))
	if len(vs) == 0 {
		return nil, fmt.Errorf("annotate %s: %s", f.Func, noCodeReason(f))
	}
	split := splitSamples(p, vs, lf.mine(codeF, o.Tid), lf.inFocus(focus))
	checkReadings(f, vs, split, run.Code)
	pick, err := pickVersion(f, vs, split, o.Version, t.pinned)
	if err != nil {
		return nil, err
	}
	in, err := annotateInput(run, f, vs[pick], split, pick, focus, o.Intel)
	if err != nil {
		return nil, err
	}
	notes := noteSourceErrors(&in)
	res := &AnnotateResult{Schema: api.Schema, Run: run.Meta.ID, Annotation: annotate.Annotate(in), Others: t.others,
		Version: pick + 1, Warning: vs[pick].Warning}
	res.Notes = *notes
	res.Annotation.Outside += split.outside
	res.Versions = versionTable(run.Meta, vs, split)
	if focus >= 0 {
		res.Inlined = &InlinedTarget{Func: p.Frames[focus].Func, Into: f.Func, Samples: res.Annotation.FocusSamples}
	}
	return res, nil
}

// leafFrames tells which frames hold an entry's leaf.
type leafFrames struct{ p *agg.Profile }

// code is an entry's code frame, which holds its leaf's code: the outermost function at
// the leaf, or the row standing for an unnamed leaf address; -1: none (kernel code).
func (lf leafFrames) code(e *agg.Entry) int32 {
	if e.LeafFunc >= 0 {
		return e.LeafFunc
	}
	if leaf, ok := lf.p.LeafFrame(e.Stack); ok && lf.p.Frames[leaf].Kind != agg.KindKernel {
		return int32(leaf)
	}
	return -1
}

// top is an entry's innermost frame (an inlined function, if the leaf is in one); -1: none.
func (lf leafFrames) top(e *agg.Entry) int32 {
	if leaf, ok := lf.p.LeafFrame(e.Stack); ok {
		return int32(leaf)
	}
	return -1
}

// scores counts the samples of each frame that is an entry's code or top frame (each
// entry once per frame), over thread tid's entries (0: all).
func (lf leafFrames) scores(tid uint32) map[int32]uint64 {
	score := make(map[int32]uint64)
	for i := range lf.p.Entries {
		e := &lf.p.Entries[i]
		if tid != 0 && e.Tid != tid {
			continue
		}
		cf, tf := lf.code(e), lf.top(e)
		if cf >= 0 {
			score[cf] += e.Count
		}
		if tf >= 0 && tf != cf {
			score[tf] += e.Count
		}
	}
	return score
}

// mine marks the entries whose code frame is codeF, of thread tid (0: all).
func (lf leafFrames) mine(codeF int32, tid uint32) []bool {
	mine := make([]bool, len(lf.p.Entries))
	for i := range lf.p.Entries {
		e := &lf.p.Entries[i]
		mine[i] = lf.code(e) == codeF && (tid == 0 || e.Tid == tid)
	}
	return mine
}

// inFocus marks the entries whose top frame is focus (none when focus is -1).
func (lf leafFrames) inFocus(focus int32) []bool {
	in := make([]bool, len(lf.p.Entries))
	for i := range lf.p.Entries {
		in[i] = focus >= 0 && lf.top(&lf.p.Entries[i]) == focus
	}
	return in
}

// target is what an annotate target names.
type target struct {
	frame  int32       // the frame named
	pinned *store.Code // the code holding the address, for an address target with bytes
	others []Match     // other functions the name matched, best first
}

// findTarget finds the frame the target names: the code holding an address (0xADDR), or
// the best sampled function whose name contains the target. Its error wraps ErrNoMatch
// when nothing matches.
func findTarget(run *store.Run, lf leafFrames, o AnnotateOptions) (target, error) {
	if addr, ok := parseAddr(o.Target); ok {
		return findAddr(run, lf, addr)
	}
	return findName(lf, o.Target, lf.scores(o.Tid))
}

// findAddr finds the code holding addr: a kept piece of code, else an unnamed address
// row ([unknown] 0xADDR) whose bytes were not kept.
func findAddr(run *store.Run, lf leafFrames, addr uint64) (target, error) {
	for i := range run.Code {
		c := &run.Code[i]
		if addr >= c.Start && addr < c.Start+max(c.Size, 1) && (len(c.Bytes) > 0 || c.Path != "") {
			return target{frame: int32(c.Frame), pinned: c}, nil
		}
	}
	p := lf.p
	for i := range p.Entries {
		if e := &p.Entries[i]; e.Leaf == addr && lf.code(e) >= 0 {
			return target{frame: lf.code(e)}, nil
		}
	}
	return target{}, fmt.Errorf("address %#x is outside any sampled function's code: %w", addr, ErrNoMatch)
}

// findName finds the sampled frames whose function name contains name (case-insensitive;
// a " (inlined)" suffix asks for inlined ones only): an exact name beats a longer one
// that contains it, then the hottest wins; the others are kept in that order.
func findName(lf leafFrames, name string, score map[int32]uint64) (target, error) {
	p := lf.p
	want, wantInlined := strings.CutSuffix(name, " (inlined)")
	lower := strings.ToLower(want)
	var matches []Match
	var ids []int32
	for id, f := range p.Frames {
		if strings.Contains(strings.ToLower(f.Func), lower) && score[int32(id)] > 0 && (!wantInlined || f.Inlined) {
			n := f.Func
			if f.Inlined {
				n += " (inlined)"
			}
			matches = append(matches, Match{Func: n, Image: f.Image, Samples: score[int32(id)]})
			ids = append(ids, int32(id))
		}
	}
	if len(matches) == 0 {
		return target{}, fmt.Errorf("no sampled function matches %q (stax top lists them): %w", name, ErrNoMatch)
	}
	order := make([]int, len(matches))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := strings.EqualFold(p.Frames[ids[order[a]]].Func, want), strings.EqualFold(p.Frames[ids[order[b]]].Func, want)
		if ea != eb {
			return ea
		}
		return matches[order[a]].Samples > matches[order[b]].Samples
	})
	t := target{frame: ids[order[0]]}
	for _, i := range order[1:] {
		t.others = append(t.others, matches[i])
	}
	return t, nil
}

// codeFrameOf returns the frame whose code shows the target frame, and the focus: for an
// inlined function, the function it was inlined into (the hottest, if several, over
// thread tid's entries; 0: all) and the inlined frame itself; else the frame and -1.
func codeFrameOf(lf leafFrames, frame int32, tid uint32) (codeF, focus int32, err error) {
	p := lf.p
	if !p.Frames[frame].Inlined {
		return frame, -1, nil
	}
	focus = frame
	into := map[int32]uint64{}
	for i := range p.Entries {
		e := &p.Entries[i]
		if lf.top(e) == focus && (tid == 0 || e.Tid == tid) {
			if cf := lf.code(e); cf >= 0 && cf != focus {
				into[cf] += e.Count
			}
		}
	}
	codeF = -1
	for cf, n := range into {
		if codeF < 0 || n > into[codeF] || n == into[codeF] && cf < codeF {
			codeF = cf
		}
	}
	if codeF < 0 {
		return -1, -1, fmt.Errorf("annotate %s: no sample says which function it was inlined into", p.Frames[frame].Func)
	}
	return codeF, focus, nil
}

// pickVersion picks the index of the version of f's code to annotate: the one asked for
// (version, 1-based; 0: none), else the one holding the pinned address, else the hottest
// whose bytes can be read. Its error says why none can be annotated.
func pickVersion(f agg.Frame, vs []store.Code, sp split, version int, pinned *store.Code) (int, error) {
	pick := -1
	switch {
	case version != 0:
		if version < 1 || version > len(vs) {
			return -1, fmt.Errorf("annotate %s: --version %d: it has %d version(s), numbered 1 to %d", f.Func, version, len(vs), len(vs))
		}
		pick = version - 1
		if !usable(vs[pick]) {
			return -1, fmt.Errorf("annotate %s: version %d: its bytes cannot be read: %s", f.Func, version, vs[pick].Error)
		}
	case pinned != nil:
		for i, c := range vs {
			if c.Start == pinned.Start && c.Size == pinned.Size && c.LoadTime == pinned.LoadTime {
				pick = i
			}
		}
	}
	if pick < 0 {
		for i, c := range vs {
			if usable(c) && (pick < 0 || sp.total[i] > sp.total[pick]) {
				pick = i
			}
		}
	}
	if pick < 0 {
		hot := 0
		for i := range vs {
			if sp.total[i] > sp.total[hot] {
				hot = i
			}
		}
		return -1, fmt.Errorf("annotate %s: its bytes cannot be read: %s", f.Func, vs[hot].Error)
	}
	return pick, nil
}

// annotateInput gathers what annotating version pick (the code c) of f needs: its bytes
// and their sources (see inputFor), its samples, the part of them in the focused inlined
// function (focus; -1: none), a window's start aligned on an instruction, the syntax.
func annotateInput(run *store.Run, f agg.Frame, c store.Code, sp split, pick int, focus int32, intel bool) (annotate.Input, error) {
	in, err := inputFor(run, c, f)
	if err != nil {
		return annotate.Input{}, fmt.Errorf("annotate %s: %w", f.Func, err)
	}
	in.Samples = sp.samples[pick]
	if pick < len(sp.counters) && len(run.Meta.Counters) > 0 {
		in.Counters, in.CounterNames = sp.counters[pick], counterNames(run, false)
		in.CountersMultiplexed = countersMultiplexed(run)
	}
	if focus >= 0 {
		in.Focus, in.FocusFunc = sp.focus[pick], run.Profile.Frames[focus].Func
	}
	if isWindow(f) {
		alignWindow(&in, in.Samples)
	}
	if intel {
		in.Syntax = disasm.SyntaxIntel
	}
	return in, nil
}

// noteSourceErrors makes in's source reader note why a source file named by the debug
// info is not shown, unless it is simply gone; the notes fill in as in is annotated.
func noteSourceErrors(in *annotate.Input) *[]string {
	var notes []string
	if read := in.Source; read != nil {
		in.Source = func(file string) ([]string, error) {
			lines, err := read(file)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				notes = append(notes, "source not shown: "+err.Error())
			}
			return lines, err
		}
	}
	return &notes
}

// versionTable lists the versions vs with their samples, their share of all the
// function's samples (those in no version included) and their load time in the run.
func versionTable(m store.Meta, vs []store.Code, sp split) []CodeVersion {
	var all uint64
	for _, n := range sp.total {
		all += n
	}
	all += sp.outside
	var out []CodeVersion
	for i, v := range vs {
		cv := CodeVersion{Index: i + 1, Start: v.Start, Size: v.Size, Samples: sp.total[i], Error: v.Error}
		if all > 0 {
			cv.Percent = 100 * float64(sp.total[i]) / float64(all)
		}
		if v.LoadTime != 0 && m.StartNs != 0 {
			sec := (float64(v.LoadTime) - float64(m.StartNs)) / 1e9
			cv.LoadSec = &sec
		}
		out = append(out, cv)
	}
	return out
}

// versionsOf returns the pieces of code kept for a frame, oldest first, each once.
func versionsOf(run *store.Run, frame uint32) []store.Code {
	var vs []store.Code
	type id struct{ start, size, load uint64 }
	seen := map[id]int{}
	for _, c := range run.Code {
		if c.Frame != frame {
			continue
		}
		k := id{c.Start, c.Size, c.LoadTime}
		if i, ok := seen[k]; ok {
			if !usable(vs[i]) && usable(c) {
				vs[i] = c
			}
			continue
		}
		seen[k] = len(vs)
		vs = append(vs, c)
	}
	sort.SliceStable(vs, func(a, b int) bool {
		if vs[a].LoadTime != vs[b].LoadTime {
			return vs[a].LoadTime < vs[b].LoadTime
		}
		return vs[a].Start < vs[b].Start
	})
	return vs
}

func usable(c store.Code) bool { return len(c.Bytes) > 0 || c.Path != "" }

// split is a function's samples divided among its code versions.
type split struct {
	samples []map[uint64]uint64 // per version, by address
	focus   []map[uint64]uint64 // the part in the focused inlined function
	total   []uint64
	outside uint64 // in no version
	// counters are, per version and address, what the counters read with the samples
	// counted (stax record --counters); nil without counters.
	counters []map[uint64][]uint64
}

// splitSamples gives each sample of the entries marked mine to the version whose range held
// its address at its time: the one loaded last at or before it (else, for clocks that
// disagree a little, the first loaded). Runs that keep every sample's time are split
// exactly; older ones by each entry's first sample.
func splitSamples(p *agg.Profile, vs []store.Code, mine, inFocus []bool) split {
	sp := split{samples: make([]map[uint64]uint64, len(vs)), focus: make([]map[uint64]uint64, len(vs)), total: make([]uint64, len(vs))}
	for i := range vs {
		sp.samples[i], sp.focus[i] = map[uint64]uint64{}, map[uint64]uint64{}
	}
	holders := map[uint64][]int{}
	holding := func(addr uint64) []int {
		h, ok := holders[addr]
		if !ok {
			for i, c := range vs {
				if addr >= c.Start && addr-c.Start < max(c.Size, 1) {
					h = append(h, i)
				}
			}
			holders[addr] = h
		}
		return h
	}
	// given counts, per entry with counters, its samples in each version: its counters
	// are shared among them in that proportion.
	given := map[int][]uint64{}
	add := func(e int, t, n uint64) {
		addr := p.Entries[e].Leaf
		h := holding(addr)
		if len(h) == 0 {
			sp.outside += n
			return
		}
		v := h[0] // oldest first
		for _, i := range h {
			if vs[i].LoadTime <= t {
				v = i
			}
		}
		if len(p.Entries[e].Counters) > 0 {
			if given[e] == nil {
				given[e] = make([]uint64, len(vs))
			}
			given[e][v] += n
		}
		sp.samples[v][addr] += n
		sp.total[v] += n
		if inFocus[e] {
			sp.focus[v][addr] += n
		}
	}
	if p.HasTimes() {
		err := p.Series.Each(0, 0, func(s agg.Sample) {
			if int(s.Key) < len(p.KeyEntry) {
				if e := p.KeyEntry[s.Key]; e >= 0 && int(e) < len(mine) && mine[e] {
					add(int(e), s.Time, 1)
				}
			}
		})
		if err == nil {
			sp.shareCounters(p, given)
			return sp
		}
		sp = splitSamples(&agg.Profile{Entries: p.Entries}, vs, mine, inFocus)
		return sp
	}
	for i := range p.Entries {
		if mine[i] {
			add(i, p.Entries[i].Time, p.Entries[i].Count)
		}
	}
	sp.shareCounters(p, given)
	return sp
}

// shareCounters gives each version what the counters of the entries' samples in it
// counted, at the entries' leaf addresses: an entry's counters are shared among the
// versions its samples fell in (given), in proportion to them.
func (sp *split) shareCounters(p *agg.Profile, given map[int][]uint64) {
	for e, perVersion := range given {
		entry := &p.Entries[e]
		var n uint64
		for _, c := range perVersion {
			n += c
		}
		if n == 0 {
			continue
		}
		if sp.counters == nil {
			sp.counters = make([]map[uint64][]uint64, len(perVersion))
		}
		for v, c := range perVersion {
			if c == 0 {
				continue
			}
			if sp.counters[v] == nil {
				sp.counters[v] = map[uint64][]uint64{}
			}
			sums := sp.counters[v][entry.Leaf]
			if sums == nil {
				sums = make([]uint64, len(entry.Counters))
				sp.counters[v][entry.Leaf] = sums
			}
			for j, x := range entry.Counters {
				if j < len(sums) {
					sums[j] += uint64(float64(x)*float64(c)/float64(n) + 0.5)
				}
			}
		}
	}
}

// isWindow says whether a frame is an unnamed address row (image+0xOFF, [unknown] 0xADDR),
// whose code is a window of bytes around the address rather than a function.
func isWindow(f agg.Frame) bool {
	return strings.HasPrefix(f.Func, "[unknown] ") || f.Kind == agg.KindUnknown
}

// alignWindow starts a window of code where decoding it reaches its hottest address on an
// instruction boundary: a window begins at an arbitrary byte, which would misdecode the
// sampled instruction.
func alignWindow(in *annotate.Input, samples map[uint64]uint64) {
	var hot, hotN uint64
	for a, n := range samples {
		if n > hotN || n == hotN && a < hot {
			hot, hotN = a, n
		}
	}
	if hotN == 0 || hot < in.Start || hot-in.Start >= uint64(len(in.Code)) {
		return
	}
	back := hot - in.Start
	for off := uint64(0); off < back; off++ {
		for _, inst := range disasm.DecodeWith(in.Code[off:back+1], in.Start+off, disasm.Options{Arch: in.Arch}) {
			if inst.Addr == hot {
				in.Code, in.Start = in.Code[off:], in.Start+off
				return
			}
		}
	}
	in.Code, in.Start = in.Code[back:], hot
}

// noCodeReason says in one line why no code was kept for a frame.
func noCodeReason(f agg.Frame) string {
	switch {
	case f.Kind == agg.KindKernel || f.Image == "[kernel.kallsyms]":
		return "kernel code is not annotated"
	case strings.HasPrefix(f.Func, "[unknown] ") && f.Image == "[unknown]":
		return "the address is in no mapping stax saw, so there are no bytes to show"
	case strings.HasPrefix(f.Func, "[unknown] "):
		return "no JIT source named this code and its bytes were not kept (the run was recorded by an older stax, or the process had exited when stax read it)"
	}
	return "its code was not located while recording"
}

// inputFor gathers what annotating code needs besides samples: its bytes, and where they
// exist its line table, call-target names and source text (kept in the run by stax save,
// else read from the image, its debug file and the source files).
func inputFor(run *store.Run, c store.Code, f agg.Frame) (annotate.Input, error) {
	code, err := codeBytes(c)
	if err != nil {
		return annotate.Input{}, err
	}
	in := annotate.Input{
		Func: f.Func, Image: f.Image, Start: c.Start, Code: code,
		Arch:   disasm.ArchFromELF(uint16(c.Arch)),
		Source: sourceReader(c, targetCreds(run.Meta)),
	}
	for _, g := range c.Gaps {
		in.Gaps = append(in.Gaps, annotate.Gap{Start: g.Start, End: g.End, Why: g.Why})
	}
	if len(c.Lines) > 0 {
		lines := c.Lines
		in.Lines = func(addr uint64) (string, int, []string) {
			i := sort.Search(len(lines), func(i int) bool { return lines[i].Addr > addr })
			if i == 0 {
				return "", 0, nil
			}
			l := lines[i-1]
			return l.File, l.Line, l.Inlined
		}
	}
	im := openImage(c)
	if len(c.Lines) == 0 && im != nil {
		in.Lines = dwarfLines(im, c)
	}
	in.Symbolize = symbolizer(run, c, im)
	return in, nil
}

// openImage opens the image native code came from, with its debug file, through the same
// symbol chain as a recording; nil for JIT code or an image that is gone or has changed.
func openImage(c store.Code) *symbol.Image {
	if c.Path == "" {
		return nil
	}
	var bid []byte
	fmt.Sscanf(c.BuildID, "%x", &bid)
	cache := symbol.NewCache(symconf.Options(func(string, ...any) {}))
	for _, path := range imagePaths(c) {
		if im, err := cache.OpenBuildID(path, bid); err == nil {
			return im
		}
	}
	return nil
}

// dwarfLines maps run-time addresses of native code to source lines and inline chains,
// from the image's DWARF or its separate debug file.
func dwarfLines(im *symbol.Image, c store.Code) annotate.LineFunc {
	return func(addr uint64) (string, int, []string) {
		loc := im.Locate(addr - c.Start + c.Vaddr)
		if len(loc.Frames) == 0 || loc.Frames[0].Line == 0 {
			return "", 0, nil
		}
		var chain []string
		for _, f := range loc.Frames[1:] {
			chain = append(chain, f.Func)
		}
		return loc.Frames[0].File, loc.Frames[0].Line, chain
	}
}

func imagePaths(c store.Code) []string {
	paths := []string{c.Path}
	if c.Pid > 0 {
		paths = append([]string{"/proc/" + strconv.Itoa(c.Pid) + "/root" + c.Path}, paths...)
	}
	return paths
}

func parseAddr(s string) (uint64, bool) {
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return 0, false
	}
	v, err := strconv.ParseUint(s[2:], 16, 64)
	return v, err == nil
}

// codeBytes returns the function's machine code: kept in the run (JIT code), or read from
// its image file, whose build-id must still match.
func codeBytes(c store.Code) ([]byte, error) {
	if len(c.Bytes) > 0 {
		return c.Bytes, nil
	}
	if c.Path == "" {
		return nil, fmt.Errorf("its bytes cannot be read: %s", c.Error)
	}
	if c.Size == 0 || c.Size > 16<<20 {
		return nil, fmt.Errorf("its size in %s (%d bytes) is unknown or too large to annotate", c.Path, c.Size)
	}
	var lastErr error
	for _, path := range imagePaths(c) {
		b, err := readImageCode(path, c)
		if err == nil {
			return b, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func readImageCode(path string, c store.Code) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read code from %s: malformed ELF", path)
		}
	}()
	f, err := targetfile.OpenELF(path)
	if err != nil {
		return nil, fmt.Errorf("read code: %w", err)
	}
	defer f.Close()
	if c.BuildID != "" {
		if id, err := debugfile.ReadBuildID(path); err == nil && fmt.Sprintf("%x", id) != c.BuildID {
			return nil, fmt.Errorf("read code: %s has changed since the recording (build-id differs)", path)
		}
	}
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_LOAD || c.Vaddr < prog.Vaddr || c.Vaddr+c.Size > prog.Vaddr+prog.Filesz {
			continue
		}
		b := make([]byte, c.Size)
		if _, err := prog.ReadAt(b, int64(c.Vaddr-prog.Vaddr)); err != nil && err != io.EOF {
			return nil, fmt.Errorf("read code from %s: %w", path, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("read code: %#x is not in a loadable segment of %s", c.Vaddr, path)
}

// symbolizer names call targets: other functions of the same image, or other JIT code of
// the run.
func symbolizer(run *store.Run, c store.Code, im *symbol.Image) annotate.SymbolFunc {
	return func(addr uint64) (string, bool) {
		if i := sort.Search(len(c.Symbols), func(i int) bool { return c.Symbols[i].Addr >= addr }); i < len(c.Symbols) && c.Symbols[i].Addr == addr {
			return c.Symbols[i].Name, true
		}
		for _, o := range run.Code {
			if addr >= o.Start && addr < o.Start+o.Size && len(o.Bytes) > 0 {
				return run.Profile.Frames[o.Frame].Func, true
			}
		}
		if im != nil && addr >= c.Start-c.Vaddr {
			if s, ok := im.Symbol(addr - c.Start + c.Vaddr); ok {
				return s.Name, true
			}
		}
		return "", false
	}
}

// sourceReader reads source files from disk, or, when one is missing and debuginfod is
// configured, from its /source endpoint for the image's build-id.
func sourceReader(c store.Code, who *proc.Creds) annotate.SourceFunc {
	cache := map[string][]string{}
	var client *debuginfod.Client
	var bid []byte
	fmt.Sscanf(c.BuildID, "%x", &bid)
	baked := map[string][]string{}
	for _, l := range c.Source {
		if l.Line <= 0 || l.Line > maxSourceLines {
			continue
		}
		b := baked[l.File]
		for len(b) < l.Line {
			b = append(b, "")
		}
		b[l.Line-1] = l.Text
		baked[l.File] = b
	}
	return func(file string) ([]string, error) {
		if lines, ok := cache[file]; ok {
			return lines, nil
		}
		if lines, ok := baked[file]; ok {
			return lines, nil
		}
		lines, err := readSourceFile(file, who)
		if errors.Is(err, os.ErrNotExist) && len(bid) > 0 {
			if client == nil {
				client = symconf.Debuginfod(func(string, ...any) {})
			}
			if client != nil {
				if p, ferr := client.FetchSource(context.Background(), bid, file); ferr == nil {
					lines, err = readSourceFile(p, nil)
				}
			}
		}
		if err != nil {
			return nil, err
		}
		cache[file] = lines
		return lines, nil
	}
}

// targetCreds is the recorded process's identity, if the run kept it.
func targetCreds(m store.Meta) *proc.Creds {
	if m.TargetUID == nil {
		return nil
	}
	return &proc.Creds{UID: *m.TargetUID, GIDs: m.TargetGIDs}
}

// readSourceFile reads a source file a recorded process's debug info names, as that
// process could have (see openNamedFile).
func readSourceFile(file string, who *proc.Creds) ([]string, error) {
	f, err := openNamedFile(file, who, maxSourceFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, nil
}

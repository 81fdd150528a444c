// Package annotate builds an annotated disassembly of one function from
// its machine code and per-address sample counts: each instruction with its
// self samples, percent of the function and a heat mark, jump targets
// labelled, call targets named, and the source line (with inline chain)
// the instructions belong to, plus a summary of the hottest source lines.
//
// The package is pure: it reads no files and talks to no kernel. Line
// tables, source text and symbols come from caller-supplied functions. The
// resulting Annotation is JSON-friendly and can be rendered as text with
// WriteText.
package annotate

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/stax-profiler/stax/internal/disasm"
)

// LineFunc maps an instruction address to its source position. file ""
// or line <= 0 means unknown. inlineChain lists the call sites the code at
// addr was inlined through, innermost first (e.g. "foo.c:12"); nil if not
// inlined.
type LineFunc func(addr uint64) (file string, line int, inlineChain []string)

// SourceFunc returns the lines of a source file (without newlines).
type SourceFunc func(file string) ([]string, error)

// SymbolFunc names an address (e.g. a call target); ok=false if unknown.
type SymbolFunc func(addr uint64) (name string, ok bool)

// Input describes the function to annotate.
type Input struct {
	Func   string      // function name
	Image  string      // image (binary/library) name, e.g. "libc.so.6" or "[jit]"
	Start  uint64      // address of Code[0]
	Code   []byte      // the function's machine code
	Arch   disasm.Arch // instruction set
	Syntax disasm.Syntax
	// Samples maps leaf (self) addresses to sample counts. Addresses
	// inside an instruction are attributed to that instruction; addresses
	// outside [Start, Start+len(Code)) are counted in Annotation.Outside.
	Samples map[uint64]uint64
	// Focus, optional, is the part of Samples that belongs to FocusFunc, a function
	// inlined into this one: its instructions are marked.
	Focus     map[uint64]uint64
	FocusFunc string
	// Counters, optional, maps leaf addresses to what the counters named CounterNames
	// (read with each sample: stax record --counters) counted in their samples.
	Counters     map[uint64][]uint64
	CounterNames []string
	// CountersMultiplexed, optional, is the share of the time the counters counted where
	// the kernel multiplexed them.
	CountersMultiplexed *float64
	// Optional callbacks.
	Lines     LineFunc
	Source    SourceFunc
	Symbolize SymbolFunc
	// Gaps are ranges of addresses whose bytes were not captured (Code holds anything
	// there): they are shown as such, never disassembled.
	Gaps []Gap
	// MaxHotLines bounds Annotation.HotLines (default 10).
	MaxHotLines int
	// MaxInsts bounds the number of decoded instructions (default 1<<20).
	MaxInsts int
}

// Annotation is the annotated function.
type Annotation struct {
	Func    string `json:"func"`
	Image   string `json:"image,omitempty"`
	Arch    string `json:"arch"`
	Start   uint64 `json:"start"`
	End     uint64 `json:"end"` // first address after the code
	Total   uint64 `json:"total"`
	Outside uint64 `json:"outside,omitempty"` // samples outside the code
	// Focus names the inlined function whose samples FocusSamples counts (Input.Focus).
	Focus        string `json:"focus,omitempty"`
	FocusSamples uint64 `json:"focus_samples,omitempty"`
	// MaxSamples is the sample count of the hottest instruction.
	MaxSamples uint64 `json:"max_samples"`
	// Counters name the counters read with the samples (Input.CounterNames);
	// CounterTotals are what they counted in the code's samples (the gaps' included).
	Counters      []string `json:"counters,omitempty"`
	CounterTotals []uint64 `json:"counter_totals,omitempty"`
	// CountersMultiplexed is Input's.
	CountersMultiplexed *float64        `json:"counters_multiplexed,omitempty"`
	Insts               []AnnotatedInst `json:"insts"`
	Gaps                []Gap           `json:"gaps,omitempty"`
	SourceBlocks        []SourceBlock   `json:"source_blocks,omitempty"`
	HotLines            []LineStat      `json:"hot_lines,omitempty"`
}

// Gap is a range of the function's addresses whose bytes were not captured, and why.
type Gap struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"` // first address after the gap
	Why   string `json:"why"`
	// Samples is the number of samples that landed in the gap (counted in Total).
	Samples uint64 `json:"samples,omitempty"`
	// Before is the index in Insts of the first instruction after the gap.
	Before int `json:"before"`
}

// AnnotatedInst is one instruction with its samples.
type AnnotatedInst struct {
	disasm.Inst
	Samples uint64  `json:"samples"`
	Percent float64 `json:"percent"` // of Annotation.Total
	// Focus is the part of Samples in the focused inlined function (Annotation.Focus).
	Focus uint64 `json:"focus,omitempty"`
	// Counters are what the counters counted in the instruction's samples, in the order
	// of Annotation.Counters.
	Counters []uint64 `json:"counters,omitempty"`
	// Heat is 0 for an instruction without samples, else 1..8 scaled to
	// the hottest instruction of the function.
	Heat int `json:"heat"`
	// Label is set ("L1", "L2", ...) if a branch in the function jumps here.
	Label string `json:"label,omitempty"`
	// JumpFrom lists the addresses of the branches in the function that
	// jump here.
	JumpFrom []uint64 `json:"jump_from,omitempty"`
	// JumpLabel is the label of the target of a branch within the function.
	JumpLabel string `json:"jump_label,omitempty"`
	// Backward is set for a branch within the function to an address at or
	// before itself (a loop edge).
	Backward bool `json:"backward,omitempty"`
	// Display is the instruction text as rendered: in-function branch
	// targets replaced by labels, other targets named.
	Display string `json:"display"`
	// Block indexes SourceBlocks (-1 without line information).
	Block int `json:"block"`
}

// SourceBlock is a run of consecutive instructions from the same source
// line (and inline chain).
type SourceBlock struct {
	File        string   `json:"file"`
	Line        int      `json:"line"`
	Text        string   `json:"text,omitempty"` // the source line, if available
	InlineChain []string `json:"inline_chain,omitempty"`
	First       int      `json:"first"` // index of the first instruction
	Last        int      `json:"last"`  // index of the last instruction
	Samples     uint64   `json:"samples"`
	Percent     float64  `json:"percent"`
	// Counters are what the counters counted in the block's samples (Annotation.Counters).
	Counters []uint64 `json:"counters,omitempty"`
}

// LineStat is the total of one source line over the function.
type LineStat struct {
	File    string  `json:"file"`
	Line    int     `json:"line"`
	Samples uint64  `json:"samples"`
	Percent float64 `json:"percent"`
}

// Annotate decodes and annotates a function. It never panics on bad
// input; panics in the callbacks are contained and treated as "unknown".
func Annotate(in Input) *Annotation {
	maxInsts := in.MaxInsts
	if maxInsts <= 0 {
		maxInsts = 1 << 20
	}
	a := &Annotation{
		Func:  in.Func,
		Image: in.Image,
		Arch:  in.Arch.String(),
		Start: in.Start,
		End:   in.Start + uint64(len(in.Code)),
	}
	a.Gaps = clipGaps(in.Gaps, a.Start, a.End)
	// Decode the captured stretches between the gaps.
	var insts []disasm.Inst
	from := a.Start
	for i := 0; i <= len(a.Gaps); i++ {
		to := a.End
		if i < len(a.Gaps) {
			to = a.Gaps[i].Start
		}
		if to > from && len(insts) < maxInsts {
			insts = append(insts, disasm.DecodeWith(in.Code[from-a.Start:to-a.Start], from, disasm.Options{
				Arch: in.Arch, Syntax: in.Syntax, MaxInsts: maxInsts - len(insts),
			})...)
		}
		if i < len(a.Gaps) {
			a.Gaps[i].Before = len(insts)
			from = a.Gaps[i].End
		}
	}
	a.Insts = make([]AnnotatedInst, len(insts))
	for i := range insts {
		a.Insts[i] = AnnotatedInst{Inst: insts[i], Block: -1}
	}
	if len(insts) > 0 {
		last := insts[len(insts)-1]
		a.End = last.Addr + uint64(last.Len)
		if n := len(a.Gaps); n > 0 && a.Gaps[n-1].Before == len(insts) {
			a.End = max(a.End, a.Gaps[n-1].End)
		}
	}
	a.attributeSamples(in.Samples)
	a.attributeCounters(in.CounterNames, in.Counters)
	if len(a.Counters) > 0 {
		a.CountersMultiplexed = in.CountersMultiplexed
	}
	if len(in.Focus) > 0 {
		a.Focus = in.FocusFunc
		for addr, n := range in.Focus {
			if i := a.index(addr); i >= 0 {
				a.Insts[i].Focus += n
				a.FocusSamples += n
			}
		}
	}
	a.labelJumps()
	a.render(in.Symbolize)
	a.sourceBlocks(in.Lines, in.Source)
	a.hotLines(in.MaxHotLines)
	return a
}

// index returns the index of the instruction containing addr, or -1.
func (a *Annotation) index(addr uint64) int {
	if addr < a.Start || addr >= a.End || len(a.Insts) == 0 {
		return -1
	}
	i := sort.Search(len(a.Insts), func(i int) bool { return a.Insts[i].Addr > addr }) - 1
	if i < 0 {
		return -1
	}
	in := &a.Insts[i]
	if addr >= in.Addr+uint64(in.Len) {
		return -1
	}
	return i
}

// clipGaps returns gaps clipped to [start, end), sorted, without overlaps (an overlapping
// gap is joined to the one before it), each with its reason.
func clipGaps(gaps []Gap, start, end uint64) []Gap {
	var out []Gap
	for _, g := range gaps {
		g.Start, g.End, g.Samples, g.Before = max(g.Start, start), min(g.End, end), 0, 0
		if g.Start < g.End {
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	n := 0
	for _, g := range out {
		if n > 0 && g.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, g.End)
			continue
		}
		out[n] = g
		n++
	}
	return out[:n]
}

// gap returns the index of the gap holding addr, or -1.
func (a *Annotation) gap(addr uint64) int {
	i := sort.Search(len(a.Gaps), func(i int) bool { return a.Gaps[i].End > addr })
	if i < len(a.Gaps) && addr >= a.Gaps[i].Start {
		return i
	}
	return -1
}

func (a *Annotation) attributeSamples(samples map[uint64]uint64) {
	for addr, n := range samples {
		i := a.index(addr)
		if i < 0 {
			if g := a.gap(addr); g >= 0 {
				a.Gaps[g].Samples += n
				a.Total += n
				continue
			}
			a.Outside += n
			continue
		}
		a.Insts[i].Samples += n
		a.Total += n
	}
	for i := range a.Insts {
		in := &a.Insts[i]
		if in.Samples > a.MaxSamples {
			a.MaxSamples = in.Samples
		}
	}
	for i := range a.Insts {
		in := &a.Insts[i]
		if in.Samples == 0 {
			continue
		}
		in.Percent = percent(in.Samples, a.Total)
		in.Heat = int((in.Samples*8 + a.MaxSamples - 1) / a.MaxSamples)
		if in.Heat < 1 {
			in.Heat = 1
		}
		if in.Heat > 8 {
			in.Heat = 8
		}
	}
}

// attributeCounters gives each instruction what the counters counted in its samples.
func (a *Annotation) attributeCounters(names []string, counters map[uint64][]uint64) {
	if len(names) == 0 || len(counters) == 0 {
		return
	}
	a.Counters = names
	a.CounterTotals = make([]uint64, len(names))
	for addr, vs := range counters {
		if len(vs) != len(names) {
			continue
		}
		i := a.index(addr)
		if i < 0 && a.gap(addr) < 0 {
			continue // outside the code
		}
		sumInto(a.CounterTotals, vs)
		if i >= 0 {
			in := &a.Insts[i]
			if in.Counters == nil {
				in.Counters = make([]uint64, len(names))
			}
			sumInto(in.Counters, vs)
		}
	}
}

// sumInto adds src to dst, element by element.
func sumInto(dst, src []uint64) {
	for j := range min(len(dst), len(src)) {
		dst[j] += src[j]
	}
}

func percent(n, total uint64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}

// labelJumps names the targets of branches that stay inside the function.
func (a *Annotation) labelJumps() {
	for i := range a.Insts {
		in := &a.Insts[i]
		if !in.IsJump || !in.HasTarget {
			continue
		}
		t := a.index(in.Target)
		if t < 0 || a.Insts[t].Addr != in.Target {
			continue
		}
		a.Insts[t].JumpFrom = append(a.Insts[t].JumpFrom, in.Addr)
		in.Backward = in.Target <= in.Addr
	}
	n := 0
	for i := range a.Insts {
		if len(a.Insts[i].JumpFrom) > 0 {
			n++
			a.Insts[i].Label = "L" + itoa(n)
		}
	}
	for i := range a.Insts {
		in := &a.Insts[i]
		if in.IsJump && in.HasTarget {
			if t := a.index(in.Target); t >= 0 && a.Insts[t].Addr == in.Target {
				in.JumpLabel = a.Insts[t].Label
			}
		}
	}
}

// render fills Display: in-function jump targets become labels, other
// direct targets get "<name>" from the symbolizer.
func (a *Annotation) render(sym SymbolFunc) {
	for i := range a.Insts {
		in := &a.Insts[i]
		txt := in.Text
		if in.HasTarget {
			hex := "0x" + strings.ToLower(utoaHex(in.Target))
			switch {
			case in.JumpLabel != "":
				txt = strings.Replace(txt, hex, in.JumpLabel, 1)
			case sym != nil:
				if name, ok := sym(in.Target); ok && name != "" {
					txt = strings.Replace(txt, hex, hex+" <"+name+">", 1)
				} else if in.Target >= a.Start && in.Target < a.End && a.Func != "" {
					txt = strings.Replace(txt, hex, hex+" <"+a.Func+"+0x"+utoaHex(in.Target-a.Start)+">", 1)
				}
			}
		}
		if in.HasDataRef && sym != nil {
			if name, ok := sym(in.DataRef); ok && name != "" {
				txt += " <" + name + ">"
			}
		}
		in.Display = txt
	}
}

// maxSourceLine bounds the length of a source line kept in the model.
const maxSourceLine = 240

func (a *Annotation) sourceBlocks(lines LineFunc, source SourceFunc) {
	if lines == nil {
		return
	}
	files := map[string][]string{}
	for i := range a.Insts {
		in := &a.Insts[i]
		file, line, chain := lines(in.Addr)
		if file == "" || line <= 0 {
			continue
		}
		nb := len(a.SourceBlocks)
		if nb > 0 {
			b := &a.SourceBlocks[nb-1]
			if b.Last == i-1 && b.File == file && b.Line == line && equalChain(b.InlineChain, chain) {
				b.Last = i
				b.Samples += in.Samples
				b.addCounters(in.Counters)
				in.Block = nb - 1
				continue
			}
		}
		b := SourceBlock{File: file, Line: line, First: i, Last: i, Samples: in.Samples}
		b.addCounters(in.Counters)
		if len(chain) > 0 {
			b.InlineChain = append([]string(nil), chain...)
		}
		if source != nil {
			src, ok := files[file]
			if !ok {
				src, _ = source(file) // a file that cannot be read leaves the line's text out
				files[file] = src
			}
			if line-1 < len(src) {
				b.Text = clip(src[line-1])
			}
		}
		a.SourceBlocks = append(a.SourceBlocks, b)
		in.Block = nb
	}
	for i := range a.SourceBlocks {
		a.SourceBlocks[i].Percent = percent(a.SourceBlocks[i].Samples, a.Total)
	}
}

func (b *SourceBlock) addCounters(vs []uint64) {
	if len(vs) == 0 {
		return
	}
	if b.Counters == nil {
		b.Counters = make([]uint64, len(vs))
	}
	sumInto(b.Counters, vs)
}

func clip(s string) string {
	s = strings.TrimRight(strings.ReplaceAll(s, "\t", "    "), " \r\n")
	if len(s) > maxSourceLine {
		s = s[:maxSourceLine] + "…"
	}
	return s
}

func equalChain(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (a *Annotation) hotLines(max int) {
	if max <= 0 {
		max = 10
	}
	type key struct {
		file string
		line int
	}
	sum := map[key]uint64{}
	for _, b := range a.SourceBlocks {
		if b.Samples > 0 {
			sum[key{b.File, b.Line}] += b.Samples
		}
	}
	for k, n := range sum {
		a.HotLines = append(a.HotLines, LineStat{File: k.file, Line: k.line, Samples: n, Percent: percent(n, a.Total)})
	}
	sort.Slice(a.HotLines, func(i, j int) bool {
		x, y := a.HotLines[i], a.HotLines[j]
		if x.Samples != y.Samples {
			return x.Samples > y.Samples
		}
		if x.File != y.File {
			return x.File < y.File
		}
		return x.Line < y.Line
	})
	if len(a.HotLines) > max {
		a.HotLines = a.HotLines[:max]
	}
}

// shortFile returns the last path element of a source file name.
func shortFile(f string) string {
	if f == "" {
		return "?"
	}
	return filepath.Base(f)
}

package query

import (
	"slices"
	"sort"

	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/store"
)

// UnfinishedNote is the note of a run saved before it finished.
const UnfinishedNote = "saved while still recording (or from a crashed recorder's last checkpoint)"

// ForSave returns run as stax save writes it, leaving run as it is: its code baked in
// (see Bake), and a note when it had not finished. It returns how much code was kept and
// could not be read, as Bake.
func ForSave(run *store.Run) (out *store.Run, kept, failed int) {
	c := *run
	c.Meta.Notes = slices.Clone(run.Meta.Notes)
	c.Code = slices.Clone(run.Code)
	if !c.Meta.Finished {
		c.Meta.Notes = append(c.Meta.Notes, UnfinishedNote)
	}
	kept, failed = Bake(&c)
	return &c, kept, failed
}

// Bake makes a run self-contained for annotate: every sampled function's machine code, line
// table, call-target names and source lines are copied into the run, so it annotates the
// same on a machine without the binaries, their debug files, the JIT's files or the
// sources. It returns how many functions' code was kept, and how many could have been but
// could not be read (they stay as they were: annotate says why).
func Bake(run *store.Run) (kept, failed int) {
	for i := range run.Code {
		c := &run.Code[i]
		if int(c.Frame) >= len(run.Profile.Frames) || (len(c.Bytes) == 0 && c.Path == "") {
			continue // code that was never readable (kernel code, JIT code gone before it was read)
		}
		in, err := inputFor(run, *c, run.Profile.Frames[c.Frame])
		if err != nil {
			failed++
			continue
		}
		var lines []store.Line
		if in.Lines != nil {
			get := in.Lines
			in.Lines = func(addr uint64) (string, int, []string) {
				file, line, chain := get(addr)
				if n := len(lines); n == 0 || lines[n-1].File != file || lines[n-1].Line != line || !sameChain(lines[n-1].Inlined, chain) {
					lines = append(lines, store.Line{Addr: addr, File: file, Line: line, Inlined: append([]string(nil), chain...)})
				}
				return file, line, chain
			}
		}
		syms := map[uint64]string{}
		symbolize := in.Symbolize
		in.Symbolize = func(addr uint64) (string, bool) {
			name, ok := symbolize(addr)
			if ok {
				syms[addr] = name
			}
			return name, ok
		}
		var source []store.SourceLine
		read := in.Source
		in.Source = func(file string) ([]string, error) {
			text, err := read(file)
			if err == nil {
				for n, t := range text {
					source = append(source, store.SourceLine{File: file, Line: n + 1, Text: t})
				}
			}
			return text, err
		}
		annotate.Annotate(in)

		kept++
		c.Bytes = in.Code
		if len(lines) > 0 {
			sort.SliceStable(lines, func(a, b int) bool { return lines[a].Addr < lines[b].Addr })
			c.Lines = lines
		}
		c.Symbols = nil // never written into: the run's Code may share it with another copy
		for a, n := range syms {
			c.Symbols = append(c.Symbols, store.Symbol{Addr: a, Name: n})
		}
		sort.Slice(c.Symbols, func(a, b int) bool { return c.Symbols[a].Addr < c.Symbols[b].Addr })
		c.Source = keepUsed(source, lines)
	}
	return kept, failed
}

// keepUsed keeps the source lines the line table names (a file's other lines are not shown).
func keepUsed(source []store.SourceLine, lines []store.Line) []store.SourceLine {
	type at struct {
		file string
		line int
	}
	used := map[at]bool{}
	for _, l := range lines {
		used[at{l.File, l.Line}] = true
	}
	out := source[:0]
	for _, s := range source {
		if used[at{s.File, s.Line}] {
			out = append(out, s)
		}
	}
	return out
}

func sameChain(a, b []string) bool {
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

package export

import (
	"encoding/binary"
	"io"
	"path/filepath"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// WritePprof writes the run as a gzip'd pprof profile (profile.proto), for go tool pprof.
//
// Each entry becomes a sample with two values, samples/count and cpu/nanoseconds (count
// times the sampling period), labelled pid, tid (numeric) and thread (the thread's name).
// A location is one machine frame: the function and, as further lines, the functions
// inlined into it (Line[0] the innermost), with the sampled address on leaf locations.
// Each image is a mapping (with its build-id where the run knows it); JIT'd code is in
// the mapping "[jit]" and the kernel in "[kernel.kallsyms]".
func WritePprof(w io.Writer, run *store.Run) error {
	p, err := Pprof(run)
	if err != nil {
		return err
	}
	return p.Write(w)
}

// Pprof builds the pprof profile of the run (see WritePprof).
func Pprof(run *store.Run) (*profile.Profile, error) {
	if err := check(run); err != nil {
		return nil, err
	}
	prof := &run.Profile
	period := int64(periodNs(&run.Meta))
	out := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "samples", Unit: "count"},
			{Type: "cpu", Unit: "nanoseconds"},
		},
		DefaultSampleType: "cpu",
		PeriodType:        &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:            period,
	}
	if !run.Meta.Start.IsZero() {
		out.TimeNanos = run.Meta.Start.UnixNano()
		if !run.Meta.End.IsZero() && run.Meta.End.After(run.Meta.Start) {
			out.DurationNanos = run.Meta.End.Sub(run.Meta.Start).Nanoseconds()
		}
	}
	if run.Meta.Event != "" {
		out.Comments = append(out.Comments, "event: "+cleanText(run.Meta.Event))
	}
	if len(run.Meta.Command) > 0 {
		out.Comments = append(out.Comments, "command: "+cleanText(strings.Join(run.Meta.Command, " ")))
	}

	buildIDs := map[string]string{}
	for _, c := range run.Code {
		if c.Path != "" && c.BuildID != "" {
			buildIDs[c.Path] = c.BuildID
		}
	}
	mappings := map[string]*profile.Mapping{}
	mapping := func(f *agg.Frame) *profile.Mapping {
		name := imageName(f)
		if m, ok := mappings[name]; ok {
			return m
		}
		m := &profile.Mapping{ID: uint64(len(out.Mapping) + 1), File: name, BuildID: buildIDs[f.Image],
			HasFunctions: true, HasFilenames: true, HasLineNumbers: true, HasInlineFrames: true}
		mappings[name] = m
		out.Mapping = append(out.Mapping, m)
		return m
	}
	type funcKey struct{ name, file, image string }
	funcs := map[funcKey]*profile.Function{}
	frameFuncs := make([]*profile.Function, len(prof.Frames))
	function := func(id uint32) *profile.Function {
		if fn := frameFuncs[id]; fn != nil {
			return fn
		}
		f := &prof.Frames[id]
		k := funcKey{funcName(f), f.File, imageName(f)}
		fn := funcs[k]
		if fn == nil {
			fn = &profile.Function{ID: uint64(len(out.Function) + 1), Name: cleanText(k.name), SystemName: cleanText(k.name),
				Filename: cleanText(f.File), StartLine: int64(f.Line)}
			funcs[k] = fn
			out.Function = append(out.Function, fn)
		}
		frameFuncs[id] = fn
		return fn
	}

	// Locations: one per distinct group of frames (and leaf address, for leaf groups).
	locs := map[string]*profile.Location{}
	var key []byte
	location := func(group []uint32, addr uint64) *profile.Location {
		key = key[:0]
		for _, id := range group {
			key = binary.LittleEndian.AppendUint32(key, id)
		}
		key = binary.LittleEndian.AppendUint64(key, addr)
		if l, ok := locs[string(key)]; ok {
			return l
		}
		outer := &prof.Frames[group[len(group)-1]]
		l := &profile.Location{ID: uint64(len(out.Location) + 1), Mapping: mapping(outer), Address: addr}
		for _, id := range group {
			l.Line = append(l.Line, profile.Line{Function: function(id), Line: int64(prof.Frames[id].Line)})
		}
		locs[string(key)] = l
		out.Location = append(out.Location, l)
		return l
	}
	// The non-leaf locations of a stack are the same for all its entries.
	upper := make([][]*profile.Location, len(prof.Stacks))
	upperDone := make([]bool, len(prof.Stacks))
	names := threadNames(prof)

	for _, e := range prof.Entries {
		if e.Count == 0 {
			continue
		}
		stack := prof.Stacks[e.Stack]
		if !upperDone[e.Stack] {
			first := true
			inlineGroups(prof.Frames, stack, func(lo, hi int) {
				if first {
					first = false
					return
				}
				upper[e.Stack] = append(upper[e.Stack], location(stack[lo:hi], 0))
			})
			upperDone[e.Stack] = true
		}
		s := &profile.Sample{
			Value:    []int64{int64(e.Count), int64(e.Count) * period},
			NumLabel: map[string][]int64{"pid": {int64(e.Pid)}, "tid": {int64(e.Tid)}},
		}
		if len(stack) > 0 {
			leafHi := 0
			for leafHi < len(stack)-1 && prof.Frames[stack[leafHi]].Inlined {
				leafHi++
			}
			s.Location = make([]*profile.Location, 0, 1+len(upper[e.Stack]))
			s.Location = append(s.Location, location(stack[:leafHi+1], e.Leaf))
			s.Location = append(s.Location, upper[e.Stack]...)
		}
		if name := names[threadKey{e.Pid, e.Tid}]; name != "" {
			s.Label = map[string][]string{"thread": {cleanText(name)}}
		}
		out.Sample = append(out.Sample, s)
	}
	mainFirst(out, run)
	if err := out.CheckValid(); err != nil {
		return nil, err
	}
	return out, nil
}

// mainFirst puts the recorded program's own image first among the mappings: pprof names
// the profile after its first mapping.
func mainFirst(out *profile.Profile, run *store.Run) {
	if len(run.Meta.Command) == 0 {
		return
	}
	exe := filepath.Base(run.Meta.Command[0])
	for i, m := range out.Mapping {
		if i > 0 && filepath.Base(m.File) == exe {
			copy(out.Mapping[1:i+1], out.Mapping[:i])
			out.Mapping[0] = m
			break
		}
	}
	for i, m := range out.Mapping {
		m.ID = uint64(i + 1)
	}
}

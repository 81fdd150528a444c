package export

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// SpeedscopeSchema is the $schema of speedscope's file format.
const SpeedscopeSchema = "https://www.speedscope.app/file-format-schema.json"

type ssFrame struct {
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// WriteSpeedscope writes the run in speedscope's file format (speedscope.app).
//
// Every frame of the run is a shared frame (name, file, line; JIT'd, kernel and inlined
// frames are marked in the name). Each thread is a "sampled" profile named "name (tid N)"
// whose samples are frame-index arrays, root first, in time order, consecutive samples
// with the same stack merged into one weighted by their CPU time (count times the period,
// in nanoseconds; unit "none" and weights in samples when the frequency is unknown).
// The file opens on the thread with the most samples.
func WriteSpeedscope(w io.Writer, run *store.Run) error {
	if err := check(run); err != nil {
		return err
	}
	p := &run.Profile
	samples, err := samplesByTime(p)
	if err != nil {
		return err
	}
	period := periodNs(&run.Meta)
	unit, scale := "nanoseconds", period
	if period == 0 {
		unit, scale = "none", 1
	}

	bw := bufio.NewWriterSize(w, 256<<10)
	frames := make([]ssFrame, len(p.Frames))
	for i := range p.Frames {
		f := &p.Frames[i]
		frames[i] = ssFrame{Name: displayName(f), File: cleanText(f.File), Line: f.Line}
	}

	// A stack's JSON, root first, made once.
	stackJSON := make([][]byte, len(p.Stacks))
	fst := p.FuncStacks()
	stackOf := func(si uint32) []byte {
		if b := stackJSON[si]; b != nil {
			return b
		}
		s := fst[si]
		b := make([]byte, 0, 2+len(s)*6)
		b = append(b, '[')
		for i := len(s) - 1; i >= 0; i-- {
			b = strconv.AppendUint(b, uint64(s[i]), 10)
			if i > 0 {
				b = append(b, ',')
			}
		}
		b = append(b, ']')
		stackJSON[si] = b
		return b
	}

	names := threadNames(p)
	threads := sortedThreads(p)
	index := make(map[threadKey]int, len(threads))
	for i, t := range threads {
		index[t] = i
	}
	// Per thread, the merged runs of samples: stack and weight.
	type run1 struct {
		stack  uint32
		weight uint64
	}
	per := make([][]run1, len(threads))
	for _, s := range samples {
		e := &p.Entries[s.entry]
		ti := index[threadKey{e.Pid, e.Tid}]
		rs := per[ti]
		if n := len(rs); n > 0 && rs[n-1].stack == e.Stack {
			rs[n-1].weight += uint64(s.weight)
			continue
		}
		per[ti] = append(rs, run1{e.Stack, uint64(s.weight)})
	}
	// speedscope shows one thread at a time: open on the one with the most samples.
	busiest, most := 0, uint64(0)
	for ti, rs := range per {
		var n uint64
		for _, r := range rs {
			n += r.weight
		}
		if n > most {
			busiest, most = ti, n
		}
	}
	head := map[string]any{
		"$schema":            SpeedscopeSchema,
		"name":               productName(&run.Meta) + " (stax run " + run.Meta.ID + ")",
		"exporter":           "stax",
		"activeProfileIndex": busiest,
		"shared":             map[string]any{"frames": frames},
	}
	hb, err := json.Marshal(head)
	if err != nil {
		return err
	}
	bw.Write(hb[:len(hb)-1]) // reopen the object to add the profiles
	bw.WriteString(`,"profiles":[`)
	var num []byte
	for ti, t := range threads {
		if ti > 0 {
			bw.WriteByte(',')
		}
		var end uint64
		for _, r := range per[ti] {
			end += r.weight * scale
		}
		name, _ := json.Marshal(threadLabel(names[t], t.tid))
		bw.WriteString(`{"type":"sampled","name":`)
		bw.Write(name)
		bw.WriteString(`,"unit":"` + unit + `","startValue":0,"endValue":`)
		num = strconv.AppendUint(num[:0], end, 10)
		bw.Write(num)
		bw.WriteString(`,"samples":[`)
		for i, r := range per[ti] {
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.Write(stackOf(r.stack))
		}
		bw.WriteString(`],"weights":[`)
		for i, r := range per[ti] {
			if i > 0 {
				bw.WriteByte(',')
			}
			num = strconv.AppendUint(num[:0], r.weight*scale, 10)
			bw.Write(num)
		}
		bw.WriteString(`]}`)
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// displayName is a frame's name for viewers that show names only: the function, marked
// when JIT'd, kernel or inlined.
func displayName(f *agg.Frame) string {
	n := cleanText(funcName(f))
	switch {
	case f.Inlined:
		n += " (inlined)"
	case agg.IsJITKind(f.Kind):
		n += " [jit]"
	case f.Kind == agg.KindKernel:
		n += " [kernel]"
	}
	return n
}

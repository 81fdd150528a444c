// Package export writes a recorded run in the formats other profiling tools read: pprof
// (go tool pprof), the Firefox Profiler's processed format, speedscope's file format,
// folded stacks (flamegraph.pl, inferno) and a self-contained interactive SVG flame graph.
//
// Every writer takes the whole run and reads its profile only: frames, locations, stacks,
// entries, threads and, where a format keeps time, the per-sample series. pprof keeps each
// location (address, mapping, source lines); the others count functions. A run saved before the
// series existed has no sample times: the time-keeping formats then write one sample per
// entry (its count as the weight) at the entry's first sample time.
package export

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// Format names a file format.
type Format struct {
	Name string // as given to stax export --format
	Ext  string // file name extension, with its dot
	// Write writes run in the format.
	Write func(w io.Writer, run *store.Run) error
}

// Formats lists the formats, in the order they are documented.
var Formats = []Format{
	{"pprof", ".pb.gz", WritePprof},
	{"firefox", ".json", WriteFirefox},
	{"speedscope", ".speedscope.json", WriteSpeedscope},
	{"folded", ".folded", WriteFolded},
	{"svg", ".svg", WriteSVG},
}

// Lookup returns the format called name.
func Lookup(name string) (Format, bool) {
	for _, f := range Formats {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// Names lists the format names.
func Names() []string {
	out := make([]string, len(Formats))
	for i, f := range Formats {
		out[i] = f.Name
	}
	return out
}

// periodNs is the CPU time one sample stands for (0 when the frequency is unknown).
func periodNs(m *store.Meta) uint64 {
	if m.Freq <= 0 {
		return 0
	}
	return uint64(1e9 / m.Freq)
}

// check verifies every index the writers follow, so a damaged run gives an error rather
// than a panic.
func check(run *store.Run) error {
	if run == nil {
		return errors.New("export: no run")
	}
	if err := run.Profile.CheckIndexes(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// funcName is a frame's function name, never empty.
func funcName(f *agg.Frame) string {
	if f.Func == "" {
		return "[unknown]"
	}
	return f.Func
}

// imageName is where a frame's code lives, as pprof mappings and resources name it.
func imageName(f *agg.Frame) string {
	switch f.Kind {
	case agg.KindJIT, agg.KindPython:
		return "[jit]"
	case agg.KindKernel:
		return "[kernel.kallsyms]"
	}
	if f.Image == "" {
		return "[unknown]"
	}
	return f.Image
}

// cleanText replaces control characters and invalid UTF-8 so a name fits on one line of
// any text format (and in XML, which forbids most control characters even escaped).
func cleanText(s string) string {
	ok := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				b.WriteRune('\uFFFD')
			} else {
				b.WriteRune(r)
			}
		case unicode.IsControl(r), r == '\u2028', r == '\u2029':
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// threadKey is a thread of a process.
type threadKey struct{ pid, tid uint32 }

// threadNames maps threads to their names.
func threadNames(p *agg.Profile) map[threadKey]string {
	m := make(map[threadKey]string, len(p.Threads))
	for _, t := range p.Threads {
		m[threadKey{t.Pid, t.Tid}] = t.Name
	}
	return m
}

// threadLabel is how a thread is titled: "name (tid N)".
func threadLabel(name string, tid uint32) string {
	if name == "" {
		return fmt.Sprintf("tid %d", tid)
	}
	return fmt.Sprintf("%s (tid %d)", cleanText(name), tid)
}

// timed is one sample: its time and entry; weight > 1 only when the run has no series
// and the sample stands for a whole entry.
type timed struct {
	time   uint64
	entry  int32
	weight uint32
}

// samplesByTime returns every sample of the run in time order (samples of several CPUs
// arrive out of order). Without a series, each entry is one sample at its first time
// weighted by its count (the weights then say how many samples each stands for).
func samplesByTime(p *agg.Profile) ([]timed, error) {
	var out []timed
	if !p.HasTimes() {
		out = make([]timed, 0, len(p.Entries))
		for i, e := range p.Entries {
			for c := e.Count; c > 0; {
				w := min(c, 1<<31)
				out = append(out, timed{e.Time, int32(i), uint32(w)})
				c -= w
			}
		}
	} else {
		out = make([]timed, 0, p.Series.Len())
		n := len(p.Entries)
		err := p.Series.Each(0, 0, func(s agg.Sample) {
			if int(s.Key) >= len(p.KeyEntry) {
				return
			}
			e := p.KeyEntry[s.Key]
			if e < 0 || int(e) >= n {
				return
			}
			out = append(out, timed{s.Time, e, 1})
		})
		if err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
	}
	if !sort.SliceIsSorted(out, func(i, j int) bool { return out[i].time < out[j].time }) {
		sort.SliceStable(out, func(i, j int) bool { return out[i].time < out[j].time })
	}
	return out, nil
}

// baseTime is the monotonic time that profile times count from: the run's start where
// recorded, else its first sample.
func baseTime(run *store.Run, samples []timed) uint64 {
	base := run.Meta.StartNs
	if base == 0 && len(samples) > 0 {
		base = samples[0].time
	}
	if len(samples) > 0 && samples[0].time < base {
		base = samples[0].time
	}
	return base
}

// productName names the profiled program for titles.
func productName(m *store.Meta) string {
	if len(m.Command) > 0 {
		return cleanText(filepath.Base(m.Command[0]))
	}
	if m.Pid != 0 {
		return fmt.Sprintf("pid %d", m.Pid)
	}
	return "stax"
}

// sortedThreads lists the threads that have entries, main threads first, then by pid
// and tid.
func sortedThreads(p *agg.Profile) []threadKey {
	seen := map[threadKey]bool{}
	var out []threadKey
	for _, e := range p.Entries {
		k := threadKey{e.Pid, e.Tid}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.pid != b.pid {
			return a.pid < b.pid
		}
		if (a.tid == a.pid) != (b.tid == b.pid) {
			return a.tid == a.pid
		}
		return a.tid < b.tid
	})
	return out
}

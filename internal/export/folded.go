package export

import (
	"bufio"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// WriteFolded writes the run as folded stacks (Brendan Gregg's format, read by
// flamegraph.pl and inferno): one line per distinct stack, its frames root first joined by
// ";", a space and its sample count, lines sorted. Threads are merged. Following inferno's
// convention JIT'd frames end in "_[j]", kernel frames in "_[k]" and inlined frames in
// "_[i]". A ";" inside a name becomes ":", control characters "?", so every line parses.
func WriteFolded(w io.Writer, run *store.Run) error {
	if err := check(run); err != nil {
		return err
	}
	lines, counts := foldedLines(&run.Profile)
	bw := bufio.NewWriterSize(w, 64<<10)
	var num []byte
	for i, l := range lines {
		bw.WriteString(l)
		bw.WriteByte(' ')
		num = strconv.AppendUint(num[:0], counts[i], 10)
		bw.Write(num)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// foldedLines returns the distinct folded stacks, sorted, and their counts.
func foldedLines(p *agg.Profile) ([]string, []uint64) {
	perStack := make([]uint64, len(p.Stacks))
	for _, e := range p.Entries {
		perStack[e.Stack] += e.Count
	}
	names := make([]string, len(p.Frames))
	for i := range p.Frames {
		names[i] = foldedName(&p.Frames[i])
	}
	total := map[string]uint64{}
	var b strings.Builder
	fst := p.FuncStacks()
	for si, n := range perStack {
		if n == 0 {
			continue
		}
		b.Reset()
		s := fst[si]
		for i := len(s) - 1; i >= 0; i-- {
			b.WriteString(names[s[i]])
			if i > 0 {
				b.WriteByte(';')
			}
		}
		if len(s) == 0 {
			b.WriteString("[unknown]")
		}
		total[b.String()] += n
	}
	lines := make([]string, 0, len(total))
	for l := range total {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	counts := make([]uint64, len(lines))
	for i, l := range lines {
		counts[i] = total[l]
	}
	return lines, counts
}

// foldedName is a frame's name as a folded-stack element.
func foldedName(f *agg.Frame) string {
	n := strings.ReplaceAll(cleanText(funcName(f)), ";", ":")
	switch {
	case f.Inlined:
		n += "_[i]"
	case agg.IsJITKind(f.Kind):
		n += "_[j]"
	case f.Kind == agg.KindKernel:
		n += "_[k]"
	}
	return n
}

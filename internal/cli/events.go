package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
)

// eventFlags are stax record's -e and -c.
type eventFlags struct {
	list     string
	period   uint64
	counters string
}

func (f *eventFlags) add(c *cobra.Command) {
	c.Flags().StringVarP(&f.list, "event", "e", "", "sample `EVENTS`, comma-separated: cpu-clock (default), task-clock, page-faults, major-faults, minor-faults, context-switches, cpu-migrations, alignment-faults, hardware events (cycles, instructions, cache-misses, ...), rXXXX, pmu/event=..,umask=../, a tracepoint sys:name, or a probe (root): kprobe:FUNC[+OFFSET], kretprobe:FUNC (a kernel function's entry, offset or returns), uprobe:PATH:SYMBOL[+OFFSET], uprobe:PATH:0xFILEOFFSET, uretprobe:PATH:SYMBOL (a program's or library's function; a bare PATH is a program in $PATH) (stax list-events; docs/events.md)")
	c.Flags().StringVar(&f.counters, "counters", "", "read the counters `LIST` (comma-separated events: task-clock, page-faults, context-switches, cycles, instructions, ...) with each sample, per thread: top, flame and annotate show what each function counted; none: no counters (by default cycles,instructions where the machine counts them, with dwarf stacks and no -e or -a; docs/events.md)")
	c.Flags().Uint64VarP(&f.period, "count", "c", 0, "sample every `PERIOD` events of each event instead of -F times a second (tracepoints and probes: 1 by default)")
}

// events resolves -e and -c into the events to record (nil: the default, cycles or
// cpu-clock at -F); the others sample at -F too unless -c says. freqSet says -F was given.
func (f *eventFlags) events(freqSet bool) ([]perfevent.EventSpec, error) {
	if f.period > 0 && freqSet {
		return nil, usageErr("-c and -F do not go together: -c samples every PERIOD events, -F so many times a second; keep one")
	}
	if f.period > 1<<62 {
		return nil, usageErr("-c must be from 1 to 2^62, not %d", f.period)
	}
	list := f.list
	if list == "" {
		if f.period == 0 {
			return nil, nil
		}
		list = "cpu-clock"
	}
	evs, err := perfevent.ParseEvents(list)
	if err != nil {
		return nil, usageErr("-e: %v", err)
	}
	for i := range evs {
		ev := &evs[i]
		switch {
		case f.period > 0:
			ev.Period = f.period
		case (ev.Tracepoint != "" || ev.Probe != nil) && !freqSet:
			ev.Period = 1 // as perf record: every hit of a tracepoint or probe
		}
		if err := perfevent.ResolveEvent(ev); err != nil {
			var np *perfevent.NoPMUError
			if errors.As(err, &np) || errors.Is(err, perfevent.ErrEventSyntax) {
				return nil, usageErr("%v", err)
			}
			return nil, err
		}
	}
	return evs, nil
}

// counterList resolves --counters: the counters to read with each sample. A hardware
// counter on a machine without hardware counters is left out with a note (the recording
// goes on without it), never an error. Without --counters, the default (defaultCounters);
// by says whether the list is the default.
func (f *eventFlags) counterList(notef func(format string, a ...any)) ([]perfevent.EventSpec, error) {
	switch f.counters {
	case "none":
		return nil, nil
	case "":
		return nil, nil // the default is decided with the other flags: defaultCounters
	}
	evs, err := perfevent.ParseEvents(f.counters)
	if err != nil {
		return nil, usageErr("--counters: %v", err)
	}
	var out []perfevent.EventSpec
	var dropped []string
	for _, ev := range evs {
		if ev.Tracepoint != "" {
			return nil, usageErr("--counters %s: a tracepoint is sampled (-e), not read as a counter", ev.Name)
		}
		if ev.Probe != nil {
			return nil, usageErr("--counters %s: a probe is sampled (-e), not read as a counter", ev.Name)
		}
		if err := perfevent.ResolveEvent(&ev); err != nil {
			var np *perfevent.NoPMUError
			if errors.As(err, &np) {
				dropped = append(dropped, ev.Name)
				continue
			}
			if errors.Is(err, perfevent.ErrEventSyntax) {
				return nil, usageErr("--counters: %v", err)
			}
			return nil, err
		}
		out = append(out, ev)
	}
	if len(dropped) > 0 {
		notef("this machine exposes no hardware counters: --counters %s left out; recording the rest of the profile without them", strings.Join(dropped, ","))
	}
	return out, nil
}

// defaultCounterNames are the counters read with each sample when --counters is not
// given, where the machine counts them: instructions per cycle, per function.
var defaultCounterNames = []string{"cycles", "instructions"}

// defaultCounters is --counters left out: cycles and instructions where open resolves
// both and the kernel opens them here (openHere), for a recording of the default event
// with DWARF stacks of its target's threads, whose sampling events are per thread anyway
// (-a samples per CPU, and frame-pointer stacks sample per CPU where the kernel lets them:
// counters would make them per thread); else none. Never an error nor a note: a machine
// without hardware counters records as it did.
func defaultCounters(counters, callGraph string, systemWide bool, events []perfevent.EventSpec, open func(*perfevent.EventSpec) error) []perfevent.EventSpec {
	if counters != "" || systemWide || callGraph != "dwarf" || len(events) > 0 {
		return nil
	}
	evs, err := perfevent.ParseEvents(strings.Join(defaultCounterNames, ","))
	if err != nil {
		return nil
	}
	for i := range evs {
		if open(&evs[i]) != nil {
			return nil
		}
	}
	return evs
}

// openHere resolves ev and says whether the kernel opens it here.
func openHere(ev *perfevent.EventSpec) error {
	if err := perfevent.ResolveEvent(ev); err != nil {
		return err
	}
	return perfevent.CheckEvent(*ev)
}

// addEvent adds --event, which picks the event a view counts in a run of several.
func (f *runFlags) addEvent(c *cobra.Command) {
	c.Flags().StringVar(&f.event, "event", "", "count the samples of event `NAME`, of a run recorded with several (stax record -e; default: the first; stax status lists them)")
}

// eventText describes the event a view counted, for headers: nothing for a run of the
// default event alone.
func eventText(ev *api.Event) string {
	if ev == nil || ev.Of <= 1 && ev.Period == 0 && (ev.Name == "cpu-clock" || ev.Name == "cycles") {
		return ""
	}
	if ev.Period > 0 {
		return fmt.Sprintf(" · event %s (a sample every %s)", esc(ev.Name), commas(ev.Period))
	}
	unit := ""
	if ev.Name == "cpu-clock" || ev.Name == "task-clock" {
		unit = " ns"
	}
	return fmt.Sprintf(" · event %s (%d Hz: a sample per %s%s on average)", esc(ev.Name), ev.Freq, commas(uint64(math.Round(ev.Weight))), unit)
}

// compareEvent is base and cand with the samples of their event named name alone.
func compareEvent(base, cand *store.Run, name string) (*store.Run, *store.Run, error) {
	b, _, err := query.EventView(base, name)
	if err != nil {
		return nil, nil, queryErr(err)
	}
	c, _, err := query.EventView(cand, name)
	if err != nil {
		return nil, nil, queryErr(err)
	}
	return b, c, nil
}

// samplingText says what a run sampled, for status: "cpu-clock at 999 Hz", or each event
// with its period or frequency, samples and count.
func samplingText(m *api.RunMeta) string {
	if len(m.Events) == 0 || len(m.Events) == 1 && m.Events[0].Name == m.Event && m.Events[0].Period == 0 && m.Events[0].Freq == m.Freq &&
		(m.Event == "cpu-clock" || m.Event == "cycles") {
		return fmt.Sprintf("%s at %d Hz", m.Event, m.Freq)
	}
	s := ""
	for i, e := range m.Events {
		if i > 0 {
			s += "; "
		}
		if e.Period > 0 {
			s += fmt.Sprintf("%s every %s (%s samples, %s counted)", esc(e.Name), commas(e.Period), commas(e.Samples), commas(e.Count))
		} else {
			s += fmt.Sprintf("%s at %d Hz (%s samples, %s counted)", esc(e.Name), e.Freq, commas(e.Samples), commas(e.Count))
		}
	}
	return s
}

// printTopCounters writes top's rows with what the counters read with the samples
// counted in each function itself, and its IPC where cycles and instructions were read.
func printTopCounters(w io.Writer, res api.Top) {
	multiplexedLine(w, res.CountersMultiplexed)
	head := fmt.Sprintf("%8s %10s %8s %10s", "SELF%", "SELF", "TOTAL%", "TOTAL")
	for _, c := range res.Counters {
		head += fmt.Sprintf(" %14s", strings.ToUpper(truncName(c, 14)))
	}
	if _, ok := ipcText(res.Counters, nil); ok {
		head += fmt.Sprintf(" %6s", "IPC")
	}
	fmt.Fprintln(w, head+"  FUNCTION  [IMAGE]")
	for _, row := range res.Rows {
		line := fmt.Sprintf("%7.2f%% %10s %7.2f%% %10s", row.SelfPct, commas(row.Self), row.TotalPct, commas(row.Total))
		for i := range res.Counters {
			var v uint64
			if i < len(row.Counters) {
				v = row.Counters[i]
			}
			line += fmt.Sprintf(" %14s", commas(v))
		}
		if ipc, ok := ipcText(res.Counters, row.Counters); ok {
			line += fmt.Sprintf(" %6s", ipc)
		}
		name := rowName(res.By, row.Func, row.Inlined, row.File, row.Line, row.Addr)
		fmt.Fprintf(w, "%s  %s  [%s]\n", line, name, esc(trimBrackets(row.Image)))
	}
}

// ipcText is the instructions per cycle of counts (in the order of names): "-" when no
// cycle was counted; ok is false when names lacks cycles or instructions.
func ipcText(names []string, counts []uint64) (ipc string, ok bool) {
	cyc, ins := slices.Index(names, "cycles"), slices.Index(names, "instructions")
	if cyc < 0 || ins < 0 {
		return "", false
	}
	if cyc < len(counts) && ins < len(counts) && counts[cyc] > 0 {
		return fmt.Sprintf("%.2f", float64(counts[ins])/float64(counts[cyc])), true
	}
	return "-", true
}

// nodeCountersText is what the counters (names) counted under a node of the call tree,
// for the end of its line: "  · page-faults 150 · context-switches 3"; "" without
// counters.
func nodeCountersText(names []string, counts []uint64) string {
	if len(counts) == 0 {
		return ""
	}
	var b strings.Builder
	for i, name := range names {
		if i < len(counts) {
			fmt.Fprintf(&b, "  · %s %s", esc(name), commas(counts[i]))
		}
	}
	if ipc, ok := ipcText(names, counts); ok {
		b.WriteString("  · IPC " + ipc)
	}
	return b.String()
}

// truncName is s cut to n bytes.
func truncName(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// countersText lists the counters read with each sample and their counts, for status.
func countersText(cs []api.CounterCount) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %s", esc(c.Name), commas(c.Count))
		if t := c.Time; t != nil && t.Multiplexed() {
			if v, ok := t.Scaled(c.Count); ok {
				parts[i] += fmt.Sprintf(" (%s scaled)", commas(v))
			}
		}
	}
	text := strings.Join(parts, ", ")
	if len(cs) > 0 && cs[0].Time != nil && cs[0].Time.Multiplexed() {
		text += fmt.Sprintf("; multiplexed by the kernel: they counted %.1f%% of the time (the samples too)", cs[0].Time.Share()*100)
	}
	return text
}

// multiplexedLine is the line views with counters print under their header where the
// kernel multiplexed the counters.
func multiplexedLine(w io.Writer, share *float64) {
	if share == nil {
		return
	}
	fmt.Fprintf(w, "counters multiplexed by the kernel: they counted %.1f%% of the time, and the samples were taken only then: counts are those of that time (ratios such as IPC hold)\n", *share*100)
}

// weightPart is the parts of a stored run a view weighed by a tracepoint's field reads:
// the samples kept with their fields, and the samples' keys (their entries).
func weightPart(field string) store.Parts {
	if field == "" {
		return 0
	}
	return store.Samples | store.TracesPart
}

// weightHeader is the first line of a view weighed by a tracepoint's field (--weight):
// what the rows sum, over which samples.
func weightHeader(w io.Writer, id, state string, wt *api.Weight, ev *api.Event, extra string) {
	of := "samples"
	if ev != nil {
		of = esc(ev.Name) + " samples"
	}
	note := ""
	if wt.Dropped > 0 {
		note += fmt.Sprintf(", the last kept: %s earlier let go", commas(wt.Dropped))
	}
	if wt.Skipped > 0 {
		note += fmt.Sprintf(", %s with a negative or unreadable value counted as 0", commas(uint64(wt.Skipped)))
	}
	fmt.Fprintf(w, "run %s (%s) · %s %s over %s %s%s%s\n", esc(id), state, esc(wt.Field), commas(wt.Sum), commas(uint64(wt.Samples)), of, note, extra)
}

package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
)

func statusCmd(g *globals) *cobra.Command {
	var rf runFlags
	c := &cobra.Command{
		Use:   "status",
		Short: "Describe a run: samples, losses, processes, JIT sources, what stayed unnamed",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			r, err := rf.pick()
			if err != nil {
				return err
			}
			var meta store.Meta // a stored run's
			st, err := ask(context.Background(), g, r, "/v1/status", nil, store.MetaOnly, func(run *store.Run) (api.Status, error) {
				meta = run.Meta
				return api.StatusOf(run), nil
			})
			if err != nil {
				return err
			}
			if !st.Live && r.File == "" {
				if d, err := store.SamplesDamageOf(r.StoredPath(), meta); err == nil {
					st.SamplesDamage = api.SamplesDamageOf(d)
				}
			}
			if rf.json {
				return printJSON(g.out, st)
			}
			printStatus(g, st, r)
			return nil
		},
	}
	rf.add(c)
	return c
}

func printStatus(g *globals, st api.Status, r *client.Run) {
	w := g.out
	printStatusRun(w, &st, r)
	printStatusSampling(w, &st)
	if len(st.Meta.StackEnds) > 0 {
		printStatusStacks(w, &st.Meta)
	}
	if o := st.Meta.OffCPU; o != nil {
		printStatusOffCPU(w, o, st.Meta.Lost)
	}
	printStatusCounts(w, &st)
	printStatusJIT(w, &st)
	printStatusRest(w, &st)
}

// printStatusRun is status's lines about the run: its state, what was lost, and its
// target.
func printStatusRun(w io.Writer, st *api.Status, r *client.Run) {
	m := &st.Meta
	fmt.Fprintf(w, "run:       %s (%s)\n", esc(m.ID), runState(st.State, r))
	if st.State == api.StateCrashed {
		fmt.Fprintf(w, "crashed:   the recorder ended without finishing; this is its last checkpoint, at %.1fs\n", st.ElapsedSec)
	}
	if inc := st.Incomplete; inc != nil {
		fmt.Fprintf(w, "incomplete: the final save failed (%s); this is its last good checkpoint: %s of %s samples recorded, %.1fs of %.1fs\n",
			esc(inc.Reason), commas(inc.KeptSamples), commas(inc.RecordedSamples), inc.KeptSec, inc.RecordedSec)
	}
	if d := st.SamplesDamage; d != nil {
		fmt.Fprintf(w, "damaged:   %s; top and flame count every sample, views over time (timeline, --from/--to, export, save) have the rest\n", esc(d.String()))
	}
	fmt.Fprintf(w, "command:   %s\n", esc(strings.Join(m.Command, " ")))
	mode := "launched"
	if m.Attached {
		mode = "attached"
	}
	if m.SystemWide {
		fmt.Fprintf(w, "target:    every process on every CPU (system-wide; stax top --by process lists them)")
	} else {
		fmt.Fprintf(w, "target:    pid %d (%s)", m.Pid, mode)
	}
	if m.ExitCode != nil {
		fmt.Fprintf(w, ", exit status %d", *m.ExitCode)
	}
	fmt.Fprintln(w)
}

// printStatusSampling is status's lines about the sampling, the samples and those lost.
func printStatusSampling(w io.Writer, st *api.Status) {
	m := &st.Meta
	scope := "user and kernel"
	if m.UserOnly {
		scope = "user space only"
	}
	events := ""
	if m.CPUWide {
		events = fmt.Sprintf(", one event per CPU (%s samples of other processes dropped)", commas(m.ForeignSamples))
	}
	fmt.Fprintf(w, "sampling:  %s, %s%s\n", samplingText(m), scope, events)
	if len(m.Counters) > 0 {
		how := "read with each sample"
		if m.CountersByDefault {
			how = "read with each sample by default where the machine counts them; --counters none leaves them out"
		}
		fmt.Fprintf(w, "counters:  %s (%s; stax top shows them per function)\n", countersText(m.Counters), how)
	}
	fmt.Fprintf(w, "samples:   %s in %.1fs, %s lost\n", commas(m.Samples), st.ElapsedSec, commas(m.Lost))
	if m.Window != nil {
		fmt.Fprintf(w, "window:    %s\n", windowStatus(m.Window))
	}
	if m.Lost > 0 {
		ring := ""
		if m.RingPages > 0 {
			ring = fmt.Sprintf(" (ring: %d pages per CPU; -m raises it)", m.RingPages)
		}
		fmt.Fprintf(w, "lost:      %.2f%% of samples; by cpu: %s; by thread: %s%s\n",
			float64(m.Lost)*100/float64(m.Samples+m.Lost), countsByKey(m.LostByCPU), countsByKey(m.LostByThread), ring)
	}
}

// printStatusStacks is status's lines about the stacks: how they were walked and how
// they ended, and the stack copy.
func printStatusStacks(w io.Writer, m *api.RunMeta) {
	how := "frame pointers"
	if m.CallGraph == "dwarf" {
		how = "dwarf unwinding"
		if m.NoUserFPChain {
			how += " (the program has no frame pointers: the kernel does not walk them)"
		}
	}
	fmt.Fprintf(w, "stacks by: %s; user stacks ended: %s\n", how, countsByKey(m.StackEnds))
	if len(m.JITFrames) > 0 {
		fmt.Fprintf(w, "jit frames: without unwinding info, unwound by: %s\n", countsByKey(m.JITFrames))
	}
	var all uint64
	for _, n := range m.StackEnds {
		all += n
	}
	if f := m.StackFit; m.CallGraph == "dwarf" && f != nil && f.Resizes > 0 {
		fmt.Fprintf(w, "stack copy: %d bytes per sample, fitted to the deepest stack seen (%d bytes; %d at most, reopened %d times)\n",
			m.StackSize, f.Need, f.Max, f.Resizes)
	} else if f != nil && f.Held != "" {
		fmt.Fprintf(w, "stack copy: %d bytes per sample, not fitted to the stacks: %s (see docs/stack-copy.md)\n", m.StackSize, f.Held)
	}
	copied := m.StackSize
	if m.StackFit != nil {
		copied = m.StackFit.Max
	}
	if cut := m.StackEnds["truncated"]; m.CallGraph == "dwarf" && copied > 0 && all > 0 && cut*100 > all {
		fmt.Fprintf(w, "note:      %.1f%% of stacks went deeper than the %d-byte stack copy; record with --stack-size %d for them\n",
			float64(cut)*100/float64(all), copied, min(2*copied, 65528))
	}
}

// printStatusOffCPU is status's lines about the time off CPU and the wakers; lost counts
// the records the kernel dropped.
func printStatusOffCPU(w io.Writer, o *api.OffCPUMeta, lost uint64) {
	fmt.Fprintf(w, "off-cpu:   %s switches, %s times off CPU counted", commas(o.Switches), commas(o.Intervals))
	if o.NoStack > 0 {
		fmt.Fprintf(w, " (%s without a stack)", commas(o.NoStack))
	}
	fmt.Fprintf(w, ", %s lost", commas(o.Lost))
	if o.Lost > 0 {
		fmt.Fprintf(w, " (%.1f s: the off-CPU tables were full)", float64(o.LostNs)/1e9)
	}
	fmt.Fprintln(w)
	if o.Unpaired > 0 {
		fmt.Fprintf(w, "note:      at least %s switch records were lost (a switch out with no switch in, or the reverse): the time off CPU around them is miscounted; the lost samples above count every record lost, switch records and samples alike (the kernel does not say which)\n", commas(o.Unpaired))
	}
	onCPUStatus(w, o, lost)
	exitingStatus(w, o)
	if o.StackRate > 0 && o.SampledTimes > 0 {
		fmt.Fprintf(w, "sampled:   blocked stacks sampled: %s of %s intervals took their thread's latest sampled stack of the same kind, not their own (the target switched out more than %d times a second: stacks were sampled at about %d a second per thread and CPU; --off-cpu-rate all takes every one)\n",
			commas(o.Sampled), commas(o.Intervals), o.StackRate, o.StackRate)
	}
	if o.IntervalsDropped > 0 {
		fmt.Fprintf(w, "note:      %s intervals off CPU were counted but not kept with their times (over the bound): --from/--to views of off-CPU time miss them\n", commas(o.IntervalsDropped))
	}
	if o.Wakers {
		fmt.Fprintf(w, "wakers:    %s wakeups, %s waits matched to the wakeup that ended them (stax wakers)", commas(o.Wakeups), commas(o.Woken))
		if o.WakeupsAll > o.Wakeups {
			fmt.Fprintf(w, "; sampled: %s wakeups seen of %s made", commas(o.Wakeups), commas(o.WakeupsAll))
		}
		fmt.Fprintln(w)
	} else if o.WakersOff {
		fmt.Fprintln(w, "wakers:    not recorded (--no-wakers)")
	}
}

// printStatusCounts is status's lines about what the samples hold: records, stacks,
// names, processes.
func printStatusCounts(w io.Writer, st *api.Status) {
	m := &st.Meta
	if m.OverloadSamples > 0 {
		fmt.Fprintf(w, "overload:  %s stacks came while the recorder was behind: they are frame-pointer chains, not walked whole: above the first frame with a frame pointer, frames of code built without them are missing (a busier machine than the recorder could keep up with: -F lower, or fewer busy threads, avoids it)\n",
			commas(m.OverloadSamples))
	}
	if m.BadRecords > 0 {
		fmt.Fprintf(w, "records:   %s could not be decoded\n", commas(m.BadRecords))
	}
	fmt.Fprintf(w, "stacks:    %s distinct, %s frames unresolved\n", commas(uint64(st.DistinctStacks)), commas(m.Unresolved))
	if st.UnknownSamples > 0 {
		fmt.Fprintf(w, "unnamed:   %s samples have no name for their leaf frame\n", commas(st.UnknownSamples))
	}
	if h := symbolsHint(st.Unsymbolized, m.Samples); h != "" {
		fmt.Fprintf(w, "symbols:   %s\n", esc(h))
	}
	if len(st.Processes) > 0 && !m.SystemWide {
		var ps []string
		for _, p := range st.Processes {
			s := fmt.Sprintf("%d %s", p.Pid, esc(p.Comm))
			if p.Exited {
				s += " (exited)"
			}
			ps = append(ps, s)
		}
		fmt.Fprintf(w, "processes: %s\n", strings.Join(ps, ", "))
	}
}

// printStatusJIT is status's lines about the threads and the JIT sources.
func printStatusJIT(w io.Writer, st *api.Status) {
	m := &st.Meta
	fmt.Fprintf(w, "threads:   %d\n", st.Threads)
	statusBounds(w, st.Bounds, m.SystemWide, m.OffCPU == nil)
	if len(st.JIT) == 0 {
		fmt.Fprintln(w, "jit:       no jitdump or perf map found")
	}
	for _, j := range st.JIT {
		line := fmt.Sprintf("jit:       pid %d %s %s: %d functions, %d records", j.Pid, j.Kind, j.Path, j.Functions, j.Records)
		if len(j.Skipped) > 0 {
			var reasons []string
			for k, v := range j.Skipped {
				reasons = append(reasons, fmt.Sprintf("%d %s", v, k))
			}
			sort.Strings(reasons)
			line += ", skipped " + strings.Join(reasons, ", ")
		}
		if j.Evicted > 0 {
			line += fmt.Sprintf(", %d oldest dropped (the process was at its share of the JIT memory)", j.Evicted)
		}
		if j.Error != "" {
			line += " (" + j.Error + ")"
		}
		fmt.Fprintln(w, esc(line))
	}
	if m.JITMemory > 0 {
		line := fmt.Sprintf("jit memory: %s of at most %s kept in JIT tables", bytesText(int64(m.JITMemory)), bytesText(int64(m.JITMemoryLimit)))
		if m.JITProcesses > 1 {
			line += fmt.Sprintf(", shared by %d processes: at most %s each", m.JITProcesses, bytesText(int64(m.JITMemoryShare)))
		}
		fmt.Fprintln(w, line)
	}
}

// printStatusRest is status's last lines: files refused, spans, JIT code, push, notes.
func printStatusRest(w io.Writer, st *api.Status) {
	m := &st.Meta
	if m.FilesRefused > 0 || m.FilesAbandoned > 0 {
		fmt.Fprintf(w, "files:     %s of the programs' files refused (not regular files: not opened), %s opens abandoned (no answer in time); the notes name them\n",
			commas(m.FilesRefused), commas(m.FilesAbandoned))
	}
	for _, src := range m.SpanSources {
		fmt.Fprintln(w, esc(spanSourceLine(src)))
	}
	if st.JITSamples > 0 {
		fmt.Fprintf(w, "jit code:  %s samples, %s unnamed (%.2f%%)\n", commas(st.JITSamples), commas(st.JITUnnamed),
			float64(st.JITUnnamed)*100/float64(st.JITSamples))
	}
	if ps := st.Push; ps != nil {
		fmt.Fprintf(w, "push:      %s every %gs: %s pushed, %d queued, %s failed attempts, %s dropped\n",
			esc(ps.Target), ps.EverySec, commas(ps.Pushed), ps.Queued, commas(ps.Failed), commas(ps.Dropped))
		if ps.LastError != "" {
			fmt.Fprintf(w, "push error: %s\n", esc(ps.LastError))
		}
		if ps.LeftOut > 0 {
			fmt.Fprintf(w, "push note: %s samples of events other than the first not pushed: Pyroscope takes the first event's\n", commas(ps.LeftOut))
		}
	}
	for _, n := range m.Notes {
		fmt.Fprintf(w, "note:      %s\n", esc(n))
	}
	if m.ITTHint != "" {
		fmt.Fprintf(w, "hint:      %s\n", esc(m.ITTHint))
	}
}

// symbolsHint is api.SymbolsHint: stax web's status strip gives the same fix.
func symbolsHint(imgs []api.ImageSamples, total uint64) string { return api.SymbolsHint(imgs, total) }

// countsByKey prints a map of counts as "k n, k n": numeric keys (CPUs, threads) in
// numeric order, others alphabetically.
func countsByKey(m map[string]uint64) string {
	if len(m) == 0 {
		return "unknown"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, errA := strconv.Atoi(keys[i])
		b, errB := strconv.Atoi(keys[j])
		if errA == nil && errB == nil {
			return a < b
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + commas(m[k])
	}
	return strings.Join(parts, ", ")
}

// spanSourceLine is status's line for one source of spans.
func spanSourceLine(s api.SpanSource) string {
	where := s.Kind
	switch {
	case s.Kind == spans.KindMark:
		where = "stax mark"
	case s.Path != "":
		where = fmt.Sprintf("pid %d %s %s", s.Pid, s.Kind, s.Path)
	}
	line := fmt.Sprintf("spans:     %s: %s received, %s dropped", where, commas(s.Received), commas(s.Dropped))
	if s.Bad > 0 {
		line += fmt.Sprintf(", %s unreadable", commas(s.Bad))
	}
	if s.Unfinished > 0 {
		line += fmt.Sprintf(", %s still open when their thread or the process ended", commas(s.Unfinished))
	}
	if s.Unmatched > 0 {
		line += fmt.Sprintf(", %s task ends without a begin", commas(s.Unmatched))
	}
	if s.Error != "" {
		line += " (" + s.Error + ")"
	}
	return line
}

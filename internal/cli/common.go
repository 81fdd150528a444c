package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/numfmt"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/textesc"
)

// runFlags are the flags every query command takes.
type runFlags struct {
	run       string
	json      bool
	window    query.Window
	processes query.Processes
	pid       int
	transform api.Transform
	event     string // --event (events.go)
}

func (f *runFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.run, "run", "", "run `ID` to query, or a file written by stax save (default: the live run, else the newest stored one with samples, from this terminal first; see stax list)")
	c.Flags().BoolVar(&f.json, "json", false, "print JSON (schema-versioned) for scripts")
}

// addWindow adds --from and --to, which restrict a query to part of the run.
func (f *runFlags) addWindow(c *cobra.Command) {
	c.Flags().StringVar(&f.window.From, "from", "", "only samples from `SEC` seconds after the start (-N: N seconds before the end; mark:NAME: from the first marker or span named NAME)")
	c.Flags().StringVar(&f.window.To, "to", "", "only samples before `SEC` seconds after the start (-N: before the end; +N: N seconds after --from; mark:NAME: until the first marker named NAME, or the end of the first span)")
}

// addSpan adds --span, which keeps the samples taken inside spans of one name.
func (f *runFlags) addSpan(c *cobra.Command) {
	c.Flags().StringVar(&f.window.Span, "span", "", "only samples taken inside spans named `NAME`, on their thread (nested spans included; stax spans lists them)")
}

// transformHelp ends the help of every command that takes the stack transforms.
const transformHelp = `

Stack transforms rewrite the run's stacks before the command looks at them, in this
order: --ignore RE leaves out the stacks through a function matching RE; --focus RE
keeps only those through one, from its outermost match down (its callers are dropped);
--hide RE removes the matching functions, their callees becoming their caller's;
--collapse-image IMG makes each run of frames in image IMG (its path, file name, or
name without brackets: libc.so.6, kernel.kallsyms) one frame, the function called into
it; --fold-recursion merges a function that appears again below itself (directly or
through others) into its outermost appearance; --python keeps only the Python functions
of a CPython started with perf support (python -X perf) and the native function below the
innermost one, where the sample landed. RE is a regular expression in Go's
syntax, as pprof's, matched against function names (not, as pprof also does, file
names), anywhere in the name: anchor it (^main$) to match one.`

// addTransform adds the stack transforms, which every view takes (see views.Transform).
func (f *runFlags) addTransform(c *cobra.Command) {
	c.Flags().StringVar(&f.transform.Focus, "focus", "", "only stacks through a function matching `RE`, from it down")
	c.Flags().StringVar(&f.transform.Ignore, "ignore", "", "leave out stacks through a function matching `RE`")
	c.Flags().StringVar(&f.transform.Hide, "hide", "", "remove functions matching `RE` from stacks (their callees become their caller's)")
	c.Flags().StringArrayVar(&f.transform.CollapseImage, "collapse-image", nil, "one frame per call into image `IMG`, named by the function called (repeatable)")
	c.Flags().BoolVar(&f.transform.FoldRecursion, "fold-recursion", false, "merge a function that appears again below itself into its outermost appearance")
	c.Flags().BoolVar(&f.transform.Python, "python", false, "only Python functions (CPython with perf support) and the native leaf below the innermost one")
}

// transformText describes an answer's stack transform for headers.
func transformText(t *api.Transform) string {
	if t.IsZero() {
		return ""
	}
	var s string
	if t.Ignore != "" {
		s += " · ignore " + esc(t.Ignore)
	}
	if t.Focus != "" {
		s += " · focus " + esc(t.Focus)
	}
	if t.Hide != "" {
		s += " · hide " + esc(t.Hide)
	}
	for _, img := range t.CollapseImage {
		s += " · collapse " + esc(img)
	}
	if t.FoldRecursion {
		s += " · recursion folded"
	}
	if t.Python {
		s += " · python"
	}
	return s
}

// addProcesses adds --pid and --comm, which restrict a query to some processes (a
// system-wide run holds them all).
func (f *runFlags) addProcesses(c *cobra.Command) {
	c.Flags().IntVar(&f.pid, "pid", 0, "only samples of process `PID`")
	c.Flags().StringVar(&f.processes.Comm, "comm", "", "only samples of processes named `NAME` (their main thread's name)")
}

// checkProcesses validates --pid and fills the query's process filter.
func (f *runFlags) checkProcesses() error {
	if f.pid < 0 || f.pid > 1<<22 {
		return usageErr("--pid must be a process id, not %d", f.pid)
	}
	f.processes.Pid = uint32(f.pid)
	return nil
}

// query returns q with the window's, process filter's and transform's parameters added.
func (f *runFlags) query(q url.Values) url.Values {
	if q == nil {
		q = url.Values{}
	}
	for k, v := range api.EncodeParams(struct {
		Processes api.Processes
		Window    api.WindowParams
		Transform api.Transform
	}{f.apiProcesses(), f.apiWindow(), f.transform}) {
		q[k] = v
	}
	return q
}

// view is what a view's request (top, flame, callers) asks of the run: g, thread tid, the
// flags' processes, window and transform, weighed by time with offCPU, wall or runnable.
func (f *runFlags) view(g agg.Granularity, tid int, offCPU, wall, runnable bool) api.View {
	return api.View{Granularity: g, Tid: uint32(tid), Processes: f.apiProcesses(), Window: f.apiWindow(), Transform: f.transform,
		TimeMode: api.TimeMode{OffCPU: offCPU, Wall: wall, Runnable: runnable}, Event: f.event}
}

// viewKept checks that a view's answer (top, flame, callers), of count samples (or
// nanoseconds, weighed by time), kept something of thread tid and of the flags'
// selection; a view weighed by time may keep a thread that has no samples.
func (f *runFlags) viewKept(tid int, run string, count uint64, offCPU, wall, runnable bool) error {
	if err := tidHasSamples(tid, run, count); err != nil && !offCPU {
		return err
	}
	return f.matched(tid, run, count, countWord(offCPU, wall, runnable))
}

// apiProcesses and apiWindow are the process filter and window as a request holds them.
func (f *runFlags) apiProcesses() api.Processes { return api.Processes(f.processes) }
func (f *runFlags) apiWindow() api.WindowParams { return api.WindowParams(f.window) }

// timeFlags checks --off-cpu, --wall and --runnable: at most one of the last two, and
// either makes the view one weighed by time, as --off-cpu does.
func timeFlags(offCPU *bool, wall, runnable bool) error {
	if wall && runnable {
		return usageErr("--wall and --runnable do not go together; keep one")
	}
	if wall || runnable {
		*offCPU = true
	}
	return nil
}

// countWord says what a view counts, for messages: samples, or time.
func countWord(offCPU, wall, runnable bool) string {
	switch {
	case wall:
		return "time on or off CPU"
	case runnable:
		return "runnable time"
	case offCPU:
		return "time off CPU"
	}
	return "samples"
}

// timeText says what the total of a view weighed by time holds, for headers: "off CPU
// 35,071.0 ms, of which runnable 34,502.0 ms" (off CPU is always blocked and runnable time
// together). total is the view's total (nanoseconds); t its split, nil from a recorder
// that gives none.
func timeText(total uint64, t *api.TimeTotals, wall, runnable bool) string {
	switch {
	case runnable:
		return fmt.Sprintf("runnable %s ms (waiting for a CPU)", ms(total))
	case t == nil && wall:
		return fmt.Sprintf("on and off CPU (wall clock) %s ms", ms(total))
	case t == nil:
		return fmt.Sprintf("off CPU %s ms (blocked and runnable)", ms(total))
	case wall:
		return fmt.Sprintf("on and off CPU (wall clock) %s ms: on CPU %s ms, off CPU %s ms, of which runnable %s ms",
			ms(total), ms(t.OnCPUNs), ms(t.OffCPUNs), ms(t.RunnableNs))
	}
	return fmt.Sprintf("off CPU %s ms, of which runnable %s ms", ms(t.OffCPUNs), ms(t.RunnableNs))
}

// offCPUPart is the part of a stored run that --off-cpu needs.
func offCPUPart(on bool) store.Parts {
	if on {
		return store.OffCPUPart
	}
	return 0
}

// need is what a stored run must give beyond its profile for the query's flags: the
// samples' times when the query has a window.
func (f *runFlags) need() store.Parts {
	if f.window.From != "" || f.window.To != "" || f.window.Span != "" {
		return store.Samples
	}
	return 0
}

// windowText describes an answer's window for headers.
func windowText(w *api.Window) string {
	if w == nil {
		return ""
	}
	if w.Span != "" {
		return fmt.Sprintf(" · in span %s · %.2fs–%.2fs", strconv.Quote(w.Span), w.FromSec, w.ToSec)
	}
	return fmt.Sprintf(" · %.2fs–%.2fs", w.FromSec, w.ToSec)
}

// pick checks the stack transform's flags and finds the run to query.
func (f *runFlags) pick() (*client.Run, error) {
	if _, err := query.CompileTransform(f.transform); err != nil {
		return nil, usageErr("%v", err)
	}
	r, err := client.Pick(f.run)
	return r, withCode(err)
}

// ask answers a query from the live recorder, or computes it from the stored run. A
// recorder that answers with an error, or does not answer (stopped, or overloaded: its
// checkpoint would pass for a crashed run), fails the query; only one that is no longer
// there (it finished or died since the run was found) is replaced by the stored copy, and
// the user is told so.
//
// need says which parts of a stored run offline needs beyond its profile.
func ask[T any](ctx context.Context, g *globals, r *client.Run, path string, q url.Values, need store.Parts, offline func(*store.Run) (T, error)) (T, error) {
	var out T
	gone := false
	if r.Live {
		err := r.Get(ctx, path, q, &out)
		if err == nil {
			return out, nil
		}
		if re := (*client.RequestError)(nil); errors.As(err, &re) {
			return out, usageErr("%s", re.Msg)
		}
		if ae := (*client.AnswerError)(nil); errors.As(err, &ae) && ae.Code == http.StatusNotFound {
			return out, notFound(errors.New(ae.Msg))
		}
		if ae := (*client.AnswerError)(nil); errors.As(err, &ae) && ae.Code == http.StatusUnprocessableEntity {
			return out, errors.New(ae.Msg) // the run lacks what the query needs
		}
		if !errors.Is(err, client.ErrGone) {
			return out, err
		}
		gone = true
	}
	run, err := loadStored(g, r, need)
	if err != nil {
		return out, err
	}
	if gone {
		goneNote(g, r.ID, run.Meta, "asking", "answered from")
	}
	out, err = offline(run)
	return out, queryErr(err)
}

// askFor asks req of the live recorder, or answers it from the stored run with answer:
// the same request either way.
func askFor[Q interface {
	Path() string
	Encode() url.Values
}, T any](ctx context.Context, g *globals, r *client.Run, req Q, need store.Parts, answer func(*store.Run, Q) (T, error)) (T, error) {
	return ask(ctx, g, r, req.Path(), req.Encode(), need, func(run *store.Run) (T, error) { return answer(run, req) })
}

// queryErr gives a query's error its exit code: not found (5) where it selects nothing
// of the run, an error (1) where the run lacks what it needs, else a usage error (2):
// the flags the query was given do not go together or with this run.
func queryErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, query.ErrNoSpan), errors.Is(err, query.ErrNoMatch):
		return notFound(err)
	case errors.Is(err, query.ErrNotRecorded), errors.Is(err, query.ErrNoTimes):
		return err
	}
	return usageErr("%v", err)
}

// readRun returns the run: whole from its recorder when live, else (or when the recorder
// is no longer there, saying so) the parts need names from the store.
func readRun(ctx context.Context, g *globals, r *client.Run, need store.Parts) (*store.Run, error) {
	if !r.Live {
		return loadStored(g, r, need)
	}
	run, err := r.Load(ctx)
	if !errors.Is(err, client.ErrGone) {
		return run, err
	}
	if run, err = loadStored(g, r, need); err != nil {
		return nil, err
	}
	goneNote(g, r.ID, run.Meta, "reading it", "read")
	return run, nil
}

// loadStored reads the parts of run r's stored copy that need names, and says on stderr
// what a damaged samples file lost of it (the views answer from the rest).
func loadStored(g *globals, r *client.Run, need store.Parts) (*store.Run, error) {
	run, err := r.LoadStoredParts(need)
	if err == nil && run.SamplesDamage != nil {
		fmt.Fprintf(g.errOut, "stax: run %s: %s; what it shows is the rest\n", r.ID, esc(run.SamplesDamage.String()))
	}
	return run, err
}

// goneNote tells the user that the recorder of run id went away while stax was doing
// something (while), so that it used (what it did with) the stored copy whose meta is m.
func goneNote(g *globals, id string, m store.Meta, while, did string) {
	at := ""
	if !m.End.IsZero() {
		at = m.End.Local().Format("15:04:05")
	}
	switch {
	case m.Finished && at != "":
		fmt.Fprintf(g.errOut, "stax: run %s finished while %s; %s its stored copy (finished at %s)\n", esc(id), while, did, at)
	case m.Finished:
		fmt.Fprintf(g.errOut, "stax: run %s finished while %s; %s its stored copy\n", esc(id), while, did)
	case at != "":
		fmt.Fprintf(g.errOut, "stax: the recorder of run %s ended without finishing while %s; %s its last checkpoint (from %s)\n", esc(id), while, did, at)
	default:
		fmt.Fprintf(g.errOut, "stax: the recorder of run %s ended without finishing while %s; %s its last checkpoint\n", esc(id), while, did)
	}
}

func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeJSONControls(buf.Bytes()))
	return err
}

// escapeJSONControls writes DEL, the C1 control characters and the bidirectional controls
// (U+202A to U+202E, U+2066 to U+2069), which encoding/json leaves raw, as \u escapes: the
// JSON decodes to the same values, and printed to a terminal it cannot drive it or reorder
// it. In valid UTF-8, C1 characters are exactly the pairs 0xc2 0x80..0x9f, and the bidi
// controls 0xe2 0x80 0xaa..0xae and 0xe2 0x81 0xa6..0xa9.
func escapeJSONControls(b []byte) []byte {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r == 0x7f || r >= 0x80 && r < 0xa0 || textesc.Bidi(r) }) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == 0x7f:
			out = append(out, `\u007f`...)
		case b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] < 0xa0:
			out = fmt.Appendf(out, `\u%04x`, b[i+1])
			i++
		case b[i] == 0xe2 && i+2 < len(b) && textesc.Bidi(rune(b[i+1]&0x3f)<<6|rune(b[i+2]&0x3f)|0x2000) &&
			(b[i+1] == 0x80 || b[i+1] == 0x81):
			out = fmt.Appendf(out, `\u%04x`, rune(b[i+1]&0x3f)<<6|rune(b[i+2]&0x3f)|0x2000)
			i += 2
		default:
			out = append(out, b[i])
		}
	}
	return out
}

// commas formats n with thousands separators.
var commas = numfmt.Commas

func itoa(n int) string { return strconv.Itoa(n) }

// runState is a run's state for headers, followed by why it was chosen when no run was
// named: "stored, newest from this terminal".
func runState(state string, r *client.Run) string {
	if r.Why == "" {
		return state
	}
	return state + ", " + r.Why
}

func header(w io.Writer, id, state string, samples uint64, extra string) {
	fmt.Fprintf(w, "run %s (%s) · %s samples%s\n", esc(id), state, commas(samples), extra)
}

// esc makes a name that came from the profiled programs (function, image, file, thread,
// command) safe to print as text: control characters and invalid UTF-8 become escapes, so
// a hostile name cannot drive the user's terminal. JSON output needs no such care.
func esc(s string) string { return textesc.Escape(s) }

func trimBrackets(s string) string {
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

// checkCount rejects a row count below 1.
func checkCount(flag string, n int) error {
	if n < 1 {
		return usageErr("%s must be 1 or more, not %d", flag, n)
	}
	return nil
}

func checkTid(tid int) error {
	if tid < 0 {
		return usageErr("--tid must be a thread id (stax threads lists them), not %d", tid)
	}
	return nil
}

// tidHasSamples turns an answer for a thread with no samples into a not-found error: a
// mistyped thread id would otherwise look like an idle thread.
func tidHasSamples(tid int, run string, samples uint64) error {
	if tid != 0 && samples == 0 {
		return notFound(fmt.Errorf("thread %d has no samples in run %s (stax threads --run %s lists its threads)", tid, run, run))
	}
	return nil
}

// selection describes the flags of a query that select part of the run (a thread, some
// processes, a window or span, the stacks through or not through a function), "" when
// none does.
func (f *runFlags) selection(tid int) string {
	var parts []string
	if tid != 0 {
		parts = append(parts, fmt.Sprintf("--tid %d", tid))
	}
	if f.processes.Pid != 0 {
		parts = append(parts, fmt.Sprintf("--pid %d", f.processes.Pid))
	}
	if f.processes.Comm != "" {
		parts = append(parts, "--comm "+strconv.Quote(f.processes.Comm))
	}
	if f.window.From != "" {
		parts = append(parts, "--from "+f.window.From)
	}
	if f.window.To != "" {
		parts = append(parts, "--to "+f.window.To)
	}
	if f.window.Span != "" {
		parts = append(parts, "--span "+strconv.Quote(f.window.Span))
	}
	if f.transform.Focus != "" {
		parts = append(parts, "--focus "+strconv.Quote(f.transform.Focus))
	}
	if f.transform.Ignore != "" {
		parts = append(parts, "--ignore "+strconv.Quote(f.transform.Ignore))
	}
	return strings.Join(parts, " ")
}

// matched turns an answer that counted nothing (what: samples, time off CPU, ...) under a
// selection into a not-found error of one line (exit 5): an empty table would say the
// selection's part of the run is idle, where it more likely names nothing in it. Without a
// selection, an empty answer is the run's own.
func (f *runFlags) matched(tid int, run string, count uint64, what string) error {
	sel := f.selection(tid)
	if sel == "" || count > 0 {
		return nil
	}
	return notFound(fmt.Errorf("no %s of run %s match %s (stax threads, stax top and stax spans --run %s show what it holds)", what, run, esc(sel), run))
}

// liveRun is the run --run names, else the live run a query would ask (of several, the one
// from this terminal), else nil. The caller checks that it is live.
func liveRun(run string) (*client.Run, error) {
	if run != "" {
		r, err := client.Pick(run)
		if err != nil {
			return nil, withCode(err)
		}
		return r, nil
	}
	if len(client.LiveRuns()) > 0 {
		if p, err := client.Pick(""); err == nil && p.Live {
			return p, nil
		}
	}
	return nil, nil
}

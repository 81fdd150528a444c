package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// stateMarks are the letters of timeline --states: a bucket shows its thread's state with
// the most time in it.
var stateMarks = map[string]byte{
	views.StateRunning:   '#',
	views.ReasonRunnable: 'r',
	views.ReasonLock:     'L',
	views.ReasonCond:     'C',
	views.ReasonSem:      'M',
	views.ReasonSleep:    'S',
	views.ReasonIORead:   'R',
	views.ReasonIOWrite:  'W',
	views.ReasonPoll:     'P',
	views.ReasonConnect:  'N',
	views.ReasonAccept:   'A',
	views.ReasonChild:    'H',
	views.ReasonOther:    'o',
	views.ReasonOnCPU:    '#',
}

const timelineStatesHelp = `

timeline --states: one row per thread, one letter per bucket for the state the thread
spent most of the bucket in: # running, r runnable (waiting for a CPU), and blocked:
L lock, C cond, M sem, S sleep, R io-read, W io-write, P poll, N net-connect,
A net-accept, H child, o other; a space where stax did not see the thread. --json gives the
nanoseconds of every state in every bucket.`

func timelineStates(g *globals, rf *runFlags, r *client.Run, req api.TimelineRequest) error {
	res, err := askFor(context.Background(), g, r, req, store.Samples|store.OffCPUPart, query.AnswerThreadStates)
	if err != nil {
		return err
	}
	if err := rf.matched(int(req.Tid), res.Run, uint64(len(res.Threads)), "threads"); err != nil {
		return err
	}
	if rf.json {
		return printJSON(g.out, res)
	}
	fmt.Fprintf(g.out, "run %s (%s) · %d threads · buckets of %s%s\n", res.Run, runState(res.State, r), len(res.Threads), duration(res.BucketSec), windowText(res.Window))
	printThreadStates(g.out, res)
	return nil
}

func printThreadStates(w io.Writer, res api.ThreadStates) {
	n := 0
	if len(res.Threads) > 0 {
		n = len(res.Threads[0].Buckets)
	}
	end := res.StartSec + float64(n)*res.BucketSec
	axis, endLabel := fmt.Sprintf("%.2fs", res.StartSec), fmt.Sprintf("%.2fs", end)
	pad := max(n-len(axis)-len(endLabel), 1)
	fmt.Fprintf(w, "%8s %-16s %9s %9s %9s  |%s%s%s|\n", "TID", "NAME", "RUN ms", "RUNNABLE", "BLOCKED", axis, strings.Repeat(" ", pad), endLabel)
	for _, th := range res.Threads {
		var b strings.Builder
		for _, bk := range th.Buckets {
			b.WriteByte(stateMark(bk))
		}
		var blocked uint64
		for k, v := range th.Total {
			if k != views.StateRunning && k != views.ReasonRunnable {
				blocked += v
			}
		}
		name := th.Name
		if len(name) > 16 {
			name = name[:16]
		}
		fmt.Fprintf(w, "%8d %-16s %9.1f %9.1f %9.1f  |%s|\n", th.Tid, esc(name), float64(th.Total[views.StateRunning])/1e6,
			float64(th.Total[views.ReasonRunnable])/1e6, float64(blocked)/1e6, b.String())
	}
	fmt.Fprintln(w, "\n# running  r runnable  L lock  C cond  M sem  S sleep  R io-read  W io-write  P poll  N net-connect  A net-accept  H child  o other")
}

// stateMark is the letter of the state with the most time in a bucket.
func stateMark(bk map[string]uint64) byte {
	if len(bk) == 0 {
		return ' '
	}
	keys := make([]string, 0, len(bk))
	for k := range bk {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	best := keys[0]
	for _, k := range keys[1:] {
		if bk[k] > bk[best] {
			best = k
		}
	}
	if m, ok := stateMarks[best]; ok {
		return m
	}
	return 'o'
}

package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

func waitCmd(g *globals) *cobra.Command {
	var rf runFlags
	var samples int
	var seconds float64
	var symbol string
	var timeoutMS int
	c := &cobra.Command{
		Use:   "wait",
		Short: "Block until a live run has enough samples, time, or a symbol",
		Long: `Block until the live run meets every condition given, then exit 0.

Without --run, wait waits on a live run only: it gives a run being started two seconds
to appear (with --timeout-ms, that long), and if none does it exits 5, naming the stored
run it could mean. With --run naming a stored run, it answers at once from what that run
recorded.

A live run's recorder that is stopped (SIGSTOP, Ctrl-Z) ends the wait with an error
naming its pid; one that does not answer is given --timeout-ms and 10 s more.

Exit codes: 0 the condition holds; 3 the run ended first; 4 --timeout-ms passed first;
5 there is no such run (without --run: no live run).`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if samples <= 0 && seconds <= 0 && symbol == "" {
				return usageErr("wait needs --for-samples, --for-seconds or --until-symbol")
			}
			if samples < 0 || seconds < 0 || timeoutMS < 0 {
				return usageErr("wait conditions must not be negative")
			}
			ctx := context.Background()
			start := time.Now()
			if timeoutMS > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMS)*time.Millisecond)
				defer cancel()
			}
			r, err := pickForWait(ctx, rf.run)
			if err != nil {
				return err
			}
			var res api.Wait
			if r.Live {
				req := api.WaitRequest{Samples: samples, Seconds: seconds, Symbol: symbol}
				// The recorder answers when the time is up; the client gives it a grace
				// period more before it calls the recorder unresponsive. With no timeout,
				// only a stopped recorder ends the wait early.
				pollCtx := context.Background()
				if timeoutMS > 0 {
					left := time.Duration(timeoutMS)*time.Millisecond - time.Since(start)
					req.TimeoutMs = int(max(left.Milliseconds(), 1))
					var cancel context.CancelFunc
					pollCtx, cancel = context.WithTimeout(pollCtx, max(left, 0)+client.WaitGrace)
					defer cancel()
				}
				err = r.LongPoll(pollCtx, req.Path(), req.Encode(), &res)
				if na := (*client.NoAnswerError)(nil); errors.As(err, &na) {
					return err
				}
			}
			if !r.Live || err != nil {
				res, err = waitStored(r, uint64(samples), seconds, symbol)
				if err != nil {
					return err
				}
			}
			if rf.json {
				if err := printJSON(g.out, res); err != nil {
					return err
				}
			}
			switch res.Outcome {
			case api.WaitMet:
				if !rf.json {
					fmt.Fprintf(g.out, "run %s: condition met at %s samples after %.1fs\n", esc(res.Run), commas(res.Samples), res.ElapsedSec)
				}
				return nil
			case api.WaitEnded:
				return &exitError{ExitEnded, fmt.Errorf("run %s ended with %s samples before the condition held", res.Run, commas(res.Samples))}
			default:
				return &exitError{ExitTimeout, fmt.Errorf("timed out after %d ms waiting on run %s (%s samples so far)", timeoutMS, res.Run, commas(res.Samples))}
			}
		},
	}
	rf.add(c)
	c.Flags().IntVar(&samples, "for-samples", 0, "wait until the run has `N` samples")
	c.Flags().Float64Var(&seconds, "for-seconds", 0, "wait until the run has recorded for `N` seconds")
	c.Flags().StringVar(&symbol, "until-symbol", "", "wait until a function whose name contains `S` has been sampled")
	c.Flags().IntVar(&timeoutMS, "timeout-ms", 0, "give up after `MS` milliseconds (exit 4); 0 waits as long as the run lasts")
	return c
}

// pickForWait picks the run to wait on: the one named, else a live one, giving a run that
// is being started two seconds to appear, or the whole --timeout-ms when one is given. A
// stored run is waited on only when named: without --run, no live run is an error that
// names the stored run it could mean.
func pickForWait(ctx context.Context, id string) (*client.Run, error) {
	if id != "" {
		r, err := client.Pick(id)
		return r, withCode(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.After(deadline) {
		deadline = d
	}
	for {
		if len(client.LiveRuns()) > 0 {
			if r, err := client.Pick(""); err == nil && r.Live {
				return r, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, err := client.Pick("")
	if err != nil {
		return nil, notFound(fmt.Errorf("no live run to wait on, and no stored run either (start one with: stax record -- CMD)"))
	}
	m, err := store.ReadMeta(r.StoredPath())
	if err != nil {
		return nil, notFound(fmt.Errorf("no live run to wait on (stax list shows the runs)"))
	}
	return nil, notFound(fmt.Errorf("no live run to wait on; stax wait --run %s checks what %s run %s recorded (%s samples; %s)",
		r.ID, api.StateOf(m), r.ID, commas(m.Samples), r.Why))
}

func waitStored(r *client.Run, samples uint64, seconds float64, symbol string) (api.Wait, error) {
	run, err := store.Load(r.StoredPath())
	if err != nil {
		return api.Wait{}, err
	}
	res := api.Wait{Schema: api.Schema, Run: r.ID, Samples: run.Meta.Samples}
	if !run.Meta.End.IsZero() {
		res.ElapsedSec = run.Meta.End.Sub(run.Meta.Start).Seconds()
	}
	met := (samples == 0 || run.Meta.Samples >= samples) && (seconds == 0 || res.ElapsedSec >= seconds) &&
		(symbol == "" || views.HasSymbol(run.Profile.Frames, symbol))
	res.Outcome = api.WaitEnded
	if met {
		res.Outcome = api.WaitMet
	}
	return res, nil
}

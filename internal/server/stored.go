package server

import (
	"context"
	"sync"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// Stored makes a finished run answer as a Recording: its queries are those of the run as
// saved, a wait ends at once, and stop does nothing.
func Stored(run *store.Run) Recording {
	done := make(chan struct{})
	close(done)
	status := sync.OnceValue(func() api.Status { return api.StatusOf(run) })
	go status() // made while the first client starts: a web page asks it first
	return storedRun{run: run, done: done, status: status}
}

type storedRun struct {
	run  *store.Run
	done chan struct{}
	// status is the run's, made once: it summarizes every stack (90 ms of CPU for a run of
	// 160,000), which the web page's first load waited for beside its flame graph.
	status func() api.Status
}

func (s storedRun) ID() string            { return s.run.Meta.ID }
func (s storedRun) Status() api.Status    { return s.status() }
func (s storedRun) Snapshot() *store.Run  { return s.run }
func (s storedRun) Stop()                 {}
func (s storedRun) Done() <-chan struct{} { return s.done }
func (s storedRun) Wait(context.Context, api.WaitCondition) api.Wait {
	return api.Wait{Schema: api.Schema, Run: s.run.Meta.ID, Outcome: api.WaitEnded, Samples: s.run.Meta.Samples}
}

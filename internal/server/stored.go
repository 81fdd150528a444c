package server

import (
	"context"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// Stored makes a finished run answer as a Recording: its queries are those of the run as
// saved, a wait ends at once, and stop does nothing.
func Stored(run *store.Run) Recording {
	done := make(chan struct{})
	close(done)
	return storedRun{run: run, done: done}
}

type storedRun struct {
	run  *store.Run
	done chan struct{}
}

func (s storedRun) ID() string            { return s.run.Meta.ID }
func (s storedRun) Status() api.Status    { return api.StatusOf(s.run) }
func (s storedRun) Snapshot() *store.Run  { return s.run }
func (s storedRun) Stop()                 {}
func (s storedRun) Done() <-chan struct{} { return s.done }
func (s storedRun) Wait(context.Context, api.WaitCondition) api.Wait {
	return api.Wait{Schema: api.Schema, Run: s.run.Meta.ID, Outcome: api.WaitEnded, Samples: s.run.Meta.Samples}
}

package push

import (
	"context"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// Source is a live run.
type Source interface {
	// Snapshot returns the run as it stands.
	Snapshot() *store.Run
}

// Options say where and how often a Pusher pushes.
type Options struct {
	Target  Target
	Headers http.Header
	Every   time.Duration // how often a window is pushed (default 10 s)
	Timeout time.Duration // bound on one attempt (default 10 s)
	Encoder Encoder
	// QueueDir holds the windows not yet sent, up to QueueMax (default 360) of them.
	QueueDir string
	QueueMax int
}

// Pusher pushes a live run's profile window by window: every Every, the samples since the
// last window are encoded and queued, and a Sender sends them. Nothing it does waits on
// the endpoint.
type Pusher struct {
	o      Options
	src    Source
	q      *Queue
	s      *Sender
	cancel context.CancelFunc
	stop   chan struct{}
	looped chan struct{}
	sent   chan struct{}

	mu      sync.Mutex
	seq     uint64 // last window queued
	cut     uint64 // samples before this time (monotonic ns) were pushed
	encErr  string
	leftOut uint64 // samples of events the protocol does not take (Request.LeftOut)
}

// Start starts pushing src.
func Start(src Source, o Options) (*Pusher, error) {
	if o.Every <= 0 {
		o.Every = 10 * time.Second
	}
	if o.QueueMax <= 0 {
		o.QueueMax = 360
	}
	q, err := OpenQueue(o.QueueDir, o.QueueMax)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pusher{o: o, src: src, q: q, s: NewSender(o.Target, o.Headers, o.Timeout, q), cancel: cancel,
		stop: make(chan struct{}), looped: make(chan struct{}), sent: make(chan struct{}), seq: q.Last()}
	go func() {
		defer close(p.sent)
		p.s.Run(ctx)
	}()
	go p.loop()
	return p, nil
}

// lag is how far behind the newest sample a window ends: samples of several CPUs arrive a
// little out of order, and one that arrives after its window was pushed would be lost.
func (p *Pusher) lag() uint64 { return uint64(min(p.o.Every/2, 500*time.Millisecond)) }

func (p *Pusher) loop() {
	defer close(p.looped)
	t := time.NewTicker(p.o.Every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			run := p.src.Snapshot()
			_, last := run.Profile.TimeRange()
			if last < p.lag() {
				continue
			}
			p.push(run, last-p.lag())
		}
	}
}

// push queues the window from the last cut to cut (0: every sample since).
func (p *Pusher) push(run *store.Run, cut uint64) {
	p.mu.Lock()
	from, seq := p.cut, p.seq+1
	p.mu.Unlock()
	if cut != 0 && cut <= from {
		return
	}
	r, empty, err := p.o.Encoder.Window(run, from, cut, seq)
	if err == nil && !empty {
		err = p.q.Put(r)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.encErr = oneLine(err.Error())
		return
	}
	p.cut = cut
	p.leftOut += r.LeftOut
	if !empty {
		p.seq = seq
	}
}

// Close stops pushing: the samples since the last window are pushed as a last one, and
// what is queued is sent for up to wait. It returns how many windows are left unsent (on
// disk in the queue, which is removed when empty).
func (p *Pusher) Close(wait time.Duration) int {
	close(p.stop)
	<-p.looped
	p.push(p.src.Snapshot(), 0)
	p.cancel()
	<-p.sent
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p.s.Drain(ctx)
	left := p.q.Len()
	if left == 0 {
		os.Remove(p.o.QueueDir)
	}
	return left
}

// Status says how pushing goes.
func (p *Pusher) Status() *api.PushStatus {
	c := p.s.Counts()
	p.mu.Lock()
	encErr, leftOut := p.encErr, p.leftOut
	p.mu.Unlock()
	st := &api.PushStatus{Target: p.o.Target.String(), EverySec: p.o.Every.Seconds(), Pushed: c.Pushed,
		Queued: p.q.Len(), Failed: c.Failed, Dropped: p.q.Dropped() + c.Refused, LastError: c.LastError, LeftOut: leftOut}
	if encErr != "" {
		st.LastError = encErr
	}
	return st
}

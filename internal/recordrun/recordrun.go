// Package recordrun runs one `stax record`: the run-id file, the signals, the recorder,
// pushing, the live query socket, the web page, and the messages and exit status at the
// end. The command line is parsed and checked by internal/cli, which starts a Recording,
// waits for it and turns its Result into stax's exit status.
//
// A Recording's life: Start (everything is up and the recording runs), Wait (it ran to its
// end, was saved and summarised), Close (what Start took is given back). When the recorder
// is done, its servers are closed once, pushing is drained, and the summary is said; Stop
// ends the recording early, as a Ctrl-C does for -p and -a.
package recordrun

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/stax-profiler/stax/internal/numfmt"
	"github.com/stax-profiler/stax/internal/outfile"
	"github.com/stax-profiler/stax/internal/push"
	"github.com/stax-profiler/stax/internal/recorder"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/web"
)

// Config is a checked `stax record` command line, with what the command line's package
// provides: its messages and the push and web starters.
type Config struct {
	Recorder  recorder.Options // the target, sampling and environment; Notef is set from Notef
	Quiet     bool             // -q: say nothing but errors (and a failed save)
	RunIDFile string           // --run-id-file: where the run's id is written once recording has begun

	// Notef says one line on stderr (the command line's "stax: " prefix and escaping).
	Notef func(format string, a ...any)

	// Attached, for -p, is called once the recorder is up; it returns what undoes it, called
	// by Close.
	Attached func() (undo func())

	// Push, with StartPush set, pushes the profile while recording (--push).
	Push Push

	// StartWeb, when set, serves the recording to a browser too (--web), through the live
	// query handler h of run id; once the run is saved, the page serves the stored run
	// until a signal (Ctrl-C) ends it.
	StartWeb func(h http.Handler, id string) (*web.Server, error)
}

// Push is --push: how pushing starts, where to, and how long the end may wait for it.
type Push struct {
	Start   func(rec *recorder.Recorder) (*push.Pusher, error)
	URL     string
	Timeout time.Duration // what is queued at the end is sent for up to Timeout
}

// Result is how a recording ended.
type Result struct {
	// Exit is the launched command's exit status (0 when attached or system-wide).
	Exit int
	// Saved says the run was saved whole; when false, the store keeps its last good
	// checkpoint and stax exits with its own status for that.
	Saved bool
}

// A Recording is one `stax record` under way.
type Recording struct {
	cfg     Config
	rec     *recorder.Recorder
	started time.Time

	idFile    *os.File      // the run-id file's temporary, renamed into place once recording began
	idInto    bool          // the run-id file is no regular file: the id is written into it
	idWritten chan struct{} // closed once the id was written into it (idInto)
	sigs      chan os.Signal
	undo      func() // undoes Attached
	srv       *server.Server
	wsrv      *web.Server
	serving   bool          // the page serves the stored run after the recording (set by finish)
	stopServe chan struct{} // closed by a signal once the recording has finished
	stopOnce  sync.Once
	pusher    *push.Pusher
	finished  chan struct{} // closed once the end has been said (see finish)
	saveFails bool          // set by finish before finished is closed

	closeOnce sync.Once
}

// Start starts the recording with everything around it: signals are caught before the
// command starts (a Ctrl-C the moment it runs must not kill stax), the run-id file is
// created first (a path it cannot be written to fails before the command runs), then the
// recorder, pushing, the live query socket and the web page. A failed push, socket or page
// is said and the recording goes on without it. On error nothing is left behind; the
// error of recorder.Start is returned as it is (its launch errors tell the exit status).
func Start(cfg Config) (*Recording, error) {
	r := &Recording{cfg: cfg, finished: make(chan struct{}), stopServe: make(chan struct{})}
	notef := cfg.Notef
	if info, err := os.Stat(cfg.RunIDFile); err == nil && !info.Mode().IsRegular() && !info.IsDir() {
		// A FIFO, a pipe's /dev/fd/N or a terminal: written into once the run has an id,
		// never replaced by a regular file.
		r.idInto = true
	} else if cfg.RunIDFile != "" {
		f, err := os.CreateTemp(filepath.Dir(cfg.RunIDFile), "."+filepath.Base(cfg.RunIDFile)+".*")
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err // the temporary file's name would only confuse
		}
		if err != nil {
			return nil, fmt.Errorf("write --run-id-file %s: %w (choose a path in a directory you can write)", cfg.RunIDFile, err)
		}
		r.idFile = f
	}
	r.sigs = make(chan os.Signal, 4)
	signal.Notify(r.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	r.started = time.Now()
	o := cfg.Recorder
	o.Notef = notef
	rec, err := recorder.Start(o)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.rec = rec
	if o.Pid != 0 && cfg.Attached != nil {
		r.undo = cfg.Attached()
	}
	if r.idFile != nil {
		if err := writeRunID(r.idFile, cfg.RunIDFile, rec.ID()); err != nil {
			notef("--run-id-file: %v", err)
		}
	}
	if r.idInto {
		// Opening a FIFO waits for its reader: the recording does not.
		r.idWritten = make(chan struct{})
		go func(id string) {
			defer close(r.idWritten)
			if _, err := outfile.Write(cfg.RunIDFile, 0o644, func(f *os.File) error {
				_, err := f.WriteString(id + "\n")
				return err
			}); err != nil {
				notef("--run-id-file: %v", err)
			}
		}(rec.ID())
	}
	if cfg.Push.Start != nil {
		if p, err := cfg.Push.Start(rec); err != nil {
			notef("--push is off: %v", err)
		} else {
			r.pusher = p
			rec.SetPushStatus(p.Status)
		}
	}
	if srv, err := server.Listen(rec); err != nil {
		notef("live queries are off: %v", err)
	} else {
		r.srv = srv
		go srv.Serve()
	}
	if cfg.StartWeb != nil {
		if r.srv == nil {
			notef("--web is off: live queries are off")
		} else if wsrv, err := cfg.StartWeb(server.Handler(rec, true), rec.ID()); err != nil {
			notef("--web is off: %v", err)
		} else {
			r.wsrv = wsrv
			go wsrv.Serve()
		}
	}
	if !cfg.Quiet {
		notef("recording %s as run %s (%s); ask with: stax top, stax flame, stax wait --for-samples N", r.what(), rec.ID(), eventsText(o))
	}
	go r.forwardSignals()
	go r.finish()
	return r, nil
}

// ID is the run's id.
func (r *Recording) ID() string { return r.rec.ID() }

// what names the target for the first message.
func (r *Recording) what() string {
	o := r.cfg.Recorder
	what := strings.Join(o.Argv, " ")
	if o.Pid != 0 {
		what = fmt.Sprintf("pid %d", o.Pid)
	}
	if o.SystemWide {
		what = "every process (system-wide)"
	}
	return what
}

// forwardSignals passes the signals stax gets to the launched command (which decides when
// the recording ends), or stops the recording of an attached process or of every process.
// It returns when Close stops the signals.
func (r *Recording) forwardSignals() {
	o := r.cfg.Recorder
	for sig := range r.sigs {
		select {
		case <-r.finished:
			// The recording is over: a signal ends the page's serving of the stored run
			// (and still reaches a command that runs on).
			if r.serving {
				r.stopOnce.Do(func() { close(r.stopServe) })
			}
		default:
		}
		if o.Pid != 0 || o.SystemWide {
			r.Stop()
			continue
		}
		r.rec.ForwardSignal(sig)
	}
}

// Stop ends the recording; the target keeps running. It may be called any number of times.
func (r *Recording) Stop() { r.rec.Stop() }

// finish runs once the recorder is done: it closes the web page and the live query socket
// (once each; the socket's waiters are answered first), drains pushing for up to its
// timeout meanwhile, and says what was lost and whether and where the run was saved.
func (r *Recording) finish() {
	defer close(r.finished)
	<-r.rec.Done()
	notef := r.cfg.Notef
	rec := r.rec
	srvClosed := make(chan struct{})
	go func() {
		defer close(srvClosed)
		if r.srv != nil {
			r.srv.Close()
		}
	}()
	if r.pusher != nil {
		if left := r.pusher.Close(r.cfg.Push.Timeout); left > 0 {
			notef("push: %d windows not sent to %s (%s); they stay in %s", left, r.cfg.Push.URL, r.pusher.Status().LastError,
				store.PushQueuePath(rec.ID()))
		}
	}
	<-srvClosed
	m := rec.Counts()
	if m.Lost*1000 > m.Samples+m.Lost {
		how := "or a lower -F"
		if m.OffCPU != nil && m.OffCPU.Switches > m.Samples {
			// The switches and their stacks share the rings: they are most of what was lost.
			how = fmt.Sprintf("or --no-off-cpu (its %s context switches share the rings)", commas(m.OffCPU.Switches))
		}
		notef("lost %s of %s samples (%.2f%%): the reader fell behind; record with a larger ring (-m %d; now %d pages per CPU) %s",
			commas(m.Lost), commas(m.Samples+m.Lost), float64(m.Lost)*100/float64(m.Samples+m.Lost), m.RingPages*4, m.RingPages, how)
	}
	kept, serr := rec.SaveResult()
	if r.wsrv != nil {
		r.serveStored(serr)
	}
	if serr != nil {
		r.saveFails = true
		// Said even with -q: the run is not what the store holds.
		notef("run %s was not saved whole to %s: %v", rec.ID(), store.Dir(), serr)
		notef("%s", keptText(rec.ID(), kept, m.Samples, time.Since(r.started).Seconds()))
		return
	}
	if rec.CommandRunsOn() {
		notef("recording stopped: run %s saved (%s samples); %s keeps running, and stax exits with its status when it ends",
			rec.ID(), commas(m.Samples), r.cfg.Recorder.Argv[0])
		return
	}
	if !r.cfg.Quiet {
		notef("run %s: %s samples, %s lost, saved to %s", rec.ID(), commas(m.Samples), commas(m.Lost), rec.StorePath())
	}
}

// serveStored has the page serve the run as saved, once the recording has ended: the page
// shows the final counts, and stays there until a signal. A run not saved whole is not
// served (the store keeps a checkpoint, not what the page showed).
func (r *Recording) serveStored(saveErr error) {
	if saveErr != nil {
		r.wsrv.Close()
		return
	}
	run, err := store.Load(r.rec.StorePath())
	if err != nil {
		r.cfg.Notef("--web: the stored run: %v; the page is closed", err)
		r.wsrv.Close()
		return
	}
	r.wsrv.Switch(web.HandlerSource{Handler: server.Handler(server.Stored(run), false), Stored: true})
	r.serving = true
	r.cfg.Notef("the page serves the stored run %s at %s until Ctrl-C", r.rec.ID(), r.wsrv.URL())
}

// Wait records until the launched command exits, Stop is called or the duration passes,
// then waits until the run is saved and the end said. When the run was not saved whole and
// a launched command ran on or failed, its exit status is said too: stax's own exit status
// will not tell it.
func (r *Recording) Wait() Result {
	exit := r.rec.Loop()
	<-r.finished
	if r.serving {
		<-r.stopServe
		r.wsrv.Close()
	}
	if r.saveFails {
		if argv := r.cfg.Recorder.Argv; len(argv) > 0 && (r.rec.CommandRunsOn() || exit != 0) {
			r.cfg.Notef("%s exited with status %d", argv[0], exit)
		}
		return Result{Exit: exit, Saved: false}
	}
	return Result{Exit: exit, Saved: true}
}

// Close gives back what Start took: it undoes Attached, stops catching signals, and
// removes the run-id file's temporary if the recording never began. It does not end the
// recording (see Stop and Wait). Calls after the first do nothing.
func (r *Recording) Close() {
	r.closeOnce.Do(func() {
		if r.undo != nil {
			r.undo()
		}
		signal.Stop(r.sigs)
		close(r.sigs) // no signal is delivered after signal.Stop returns
		if r.idFile != nil {
			os.Remove(r.idFile.Name()) // left only if the recording did not start
		}
		if r.idWritten != nil {
			select {
			case <-r.idWritten:
			case <-time.After(idReaderWait):
				notef := r.cfg.Notef
				if notef == nil {
					notef = func(string, ...any) {}
				}
				notef("--run-id-file: nothing read %s: the run id was not written", r.cfg.RunIDFile)
			}
		}
	})
}

// idReaderWait is how long a recording that ends waits for a reader of a run-id FIFO.
const idReaderWait = 5 * time.Second

// keptText says what the store holds of a run whose final save failed: its last good
// checkpoint, of what was recorded.
func keptText(id string, kept recorder.SavedCheckpoint, samples uint64, secs float64) string {
	if !kept.Saved {
		return fmt.Sprintf("run %s is incomplete: no checkpoint was saved; the %s samples recorded (%.1fs) are lost", id, commas(samples), secs)
	}
	return fmt.Sprintf("run %s is incomplete: the store keeps its last checkpoint, %s of the %s samples recorded (%.1fs of %.1fs); stax list and stax status mark it incomplete",
		id, commas(kept.Samples), commas(samples), kept.Seconds, secs)
}

// writeRunID writes id as one line into f, a temporary file beside path, and renames it
// to path: a reader sees the whole id or no file.
func writeRunID(f *os.File, path, id string) error {
	_, err := f.WriteString(id + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return err
}

// commas formats n with thousands separators.
var commas = numfmt.Commas

// eventsText says what is sampled, for the first line: "999 Hz", or the events with
// their frequency or period.
func eventsText(o recorder.Options) string {
	if len(o.Events) == 0 || len(o.Events) == 1 && o.Events[0].IsDefault() {
		return fmt.Sprintf("%d Hz", o.Freq)
	}
	parts := make([]string, len(o.Events))
	for i, e := range o.Events {
		switch {
		case e.Period > 0:
			parts[i] = fmt.Sprintf("%s every %d", e.Name, e.Period)
		case e.Freq > 0:
			parts[i] = fmt.Sprintf("%s at %d Hz", e.Name, e.Freq)
		default:
			parts[i] = fmt.Sprintf("%s at %d Hz", e.Name, o.Freq)
		}
	}
	return strings.Join(parts, ", ")
}

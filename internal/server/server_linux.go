// Package server answers queries about a live run on a per-user unix socket. The socket is
// created mode 0600 in a directory only the user can enter, and every connection's peer
// uid is checked.
package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/store"
)

// Recording is what the server asks of a live recording; *recorder.Recorder is one.
type Recording interface {
	ID() string
	Status() api.Status
	Snapshot() *store.Run
	Wait(ctx context.Context, cond api.WaitCondition) api.Wait
	Stop()
	Done() <-chan struct{}
}

// Server serves one recorder.
type Server struct {
	rec       Recording
	ln        net.Listener
	srv       *http.Server
	path      string
	limit     *connLimiter
	snapshots chan struct{} // a token per query building a snapshot of the run
	waiting   atomic.Int64  // queries waiting for a token
	live      bool          // answers say the run is live (else each says the run's stored state)
}

// mark sets an answer's liveness when the recording is live.
func (s *Server) mark(live *bool, state *string) {
	if s.live {
		*live, *state = true, api.StateLive
	}
}

// Listen creates the run's socket.
func Listen(rec Recording) (*Server, error) {
	dir, err := api.SocketDir()
	if err != nil {
		return nil, err
	}
	// The socket is bound under a temporary name and renamed into place once it listens:
	// a client that finds the path and is refused takes it for a dead recorder's socket.
	path := api.SocketPath(dir, rec.ID())
	tmp := filepath.Join(dir, "."+rec.ID()+".sock-"+strconv.Itoa(os.Getpid()))
	os.Remove(tmp)
	old := unix.Umask(0o177)
	ln, err := net.Listen("unix", tmp)
	unix.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // its name is path's now; Close removes that
	os.Chmod(tmp, 0o600)
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	s := newServer(rec, true)
	s.path = path
	s.ln = &peerCheckListener{UnixListener: ln.(*net.UnixListener), limit: s.limit}
	mux := s.routes()
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    16 << 10,
		ConnState:         s.limit.track,
	}
	return s, nil
}

func newServer(rec Recording, live bool) *Server {
	return &Server{rec: rec, live: live, limit: newConnLimiter(maxConns()), snapshots: make(chan struct{}, maxSnapshots)}
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", s.snapshotting(s.status))
	mux.HandleFunc("GET /v1/run", s.snapshotting(s.run))
	mux.HandleFunc("GET "+api.RunFilePath, s.snapshotting(s.runFile))
	handle(s, mux, api.TopRequest{}, query.AnswerTop, func(a *api.Top) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.FlameRequest{}, query.AnswerFlame, func(a *api.Flame) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.CallersRequest{}, query.AnswerCallers, func(a *api.Callers) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.CallersRequest{Callees: true}, query.AnswerCallers, func(a *api.Callers) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.ThreadsRequest{}, query.AnswerThreads, func(a *api.Threads) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.WakersRequest{}, query.AnswerWakers, func(a *api.Wakers) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.TimelineRequest{States: true}, query.AnswerThreadStates, func(a *api.ThreadStates) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.TimelineRequest{}, query.AnswerTimeline, func(a *api.Timeline) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.AnnotateRequest{}, query.AnswerAnnotate, nil)
	handle(s, mux, api.SpansRequest{}, query.AnswerSpans, func(a *api.Spans) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.SamplesRequest{}, query.AnswerSamples, func(a *api.Samples) (*bool, *string) { return &a.Live, &a.State })
	handle(s, mux, api.StackChartRequest{}, query.AnswerStackChart, func(a *api.StackChart) (*bool, *string) { return &a.Live, &a.State })
	mux.HandleFunc("GET /v1/wait", s.wait)
	mux.HandleFunc("POST /v1/stop", s.stop)
	mux.HandleFunc("POST /v1/mark", s.addMark)
	return mux
}

// Handler answers the socket's queries in-process: about a live recording (live), or
// about a finished run (see Stored). stax web serves the browser from it.
func Handler(rec Recording, live bool) http.Handler {
	return newServer(rec, live).routes()
}

// Serve answers until Close.
func (s *Server) Serve() {
	err := s.srv.Serve(s.ln)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "stax: serve queries: %v\n", err)
	}
}

// Close removes the socket, so no new client finds it, then stops serving after in-flight
// requests finish (waiters are answered first).
func (s *Server) Close() {
	os.Remove(s.path)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// snapshotting lets at most maxSnapshots queries build a snapshot of the run at once; the
// others wait their turn, or give up when their client does. A query gives its turn back
// once its answer is encoded (see writeJSON), not once its client has taken it, so clients
// that ask and never read cannot hold the turns of those that do. Past maxWaiting queries
// waiting, a new one is answered 503 at once: the wait of the next query stays bounded.
func (s *Server) snapshotting(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.waiting.Add(1) > maxWaiting {
			s.waiting.Add(-1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(busyBody))
			return
		}
		select {
		case s.snapshots <- struct{}{}:
			s.waiting.Add(-1)
			tw := &turnWriter{ResponseWriter: w, turns: s.snapshots}
			defer tw.giveBack()
			h(tw, r)
		case <-r.Context().Done():
			s.waiting.Add(-1)
		}
	}
}

// turnWriter carries a query's turn at building snapshots to writeJSON, which gives it
// back before sending.
type turnWriter struct {
	http.ResponseWriter
	turns chan struct{}
	once  sync.Once
}

func (t *turnWriter) giveBack() { t.once.Do(func() { <-t.turns }) }

// Unwrap lets http.ResponseController reach the connection (write deadlines, flushes).
func (t *turnWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// peerCheckListener accepts connections from this user (or root) only, within the
// connection cap.
type peerCheckListener struct {
	*net.UnixListener
	limit *connLimiter
}

func (l *peerCheckListener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		raw, err := c.SyscallConn()
		if err != nil {
			c.Close()
			continue
		}
		var cred *unix.Ucred
		var credErr error
		raw.Control(func(fd uintptr) {
			cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		})
		if credErr != nil || cred == nil || (int(cred.Uid) != os.Getuid() && cred.Uid != 0) {
			c.Close()
			continue
		}
		if !l.limit.admit(c) {
			refuse(c)
			continue
		}
		return c, nil
	}
}

// handle serves the request kind of preset (its path) from the run's snapshot: the query
// parameters decoded into a copy of preset, answered by answer, marked live (where the
// answer says it: live gives its fields) when the recording is.
func handle[Q any, PQ interface {
	*Q
	api.Request
}, T any](s *Server, mux *http.ServeMux, preset Q, answer func(*store.Run, Q) (T, error), live func(*T) (*bool, *string)) {
	mux.HandleFunc("GET "+PQ(&preset).Path(), s.snapshotting(func(w http.ResponseWriter, r *http.Request) {
		req := preset
		if err := decode(r, PQ(&req)); err != nil {
			badRequest(w, "%v", err)
			return
		}
		res, err := answer(s.rec.Snapshot(), req)
		if err != nil {
			badRequest(w, "%v", err)
			return
		}
		if live != nil {
			s.mark(live(&res))
		}
		writeJSON(w, http.StatusOK, res)
	}))
}

// badRequest answers a request that failed: a bad request, but not found (404) when an
// error among args says the query selects nothing of the run, and unprocessable (422) when
// the run lacks what the query needs (query.ErrNotRecorded): stax exits 5 and 1 for those,
// 2 only for a bad command line.
func badRequest(w http.ResponseWriter, format string, args ...any) {
	code := http.StatusBadRequest
	for _, a := range args {
		if err, ok := a.(error); ok {
			switch {
			case errors.Is(err, query.ErrNoSpan), errors.Is(err, query.ErrNoMatch):
				code = http.StatusNotFound
			case errors.Is(err, query.ErrNotRecorded), errors.Is(err, query.ErrNoTimes):
				code = http.StatusUnprocessableEntity
			}
		}
	}
	writeJSON(w, code, api.Error{Error: fmt.Sprintf(format, args...)})
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.rec.Status())
}

func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.rec.Snapshot())
}

// runFile streams the run as a saved-run file (see api.RunFilePath): nothing but the JSON
// body is held whole, so a run of any size is answered, whatever maxUnsentBytes.
func (s *Server) runFile(w http.ResponseWriter, r *http.Request) {
	var req api.RunFileRequest
	if err := decode(r, &req); err != nil {
		badRequest(w, "%v", err)
		return
	}
	run := s.rec.Snapshot()
	kept, failed := 0, 0
	if req.Bake {
		run, kept, failed = query.ForSave(run)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Trailer", strings.Join([]string{api.TrailerChecksum, api.TrailerLength, api.TrailerCodeKept, api.TrailerCodeFailed}, ", "))
	w.WriteHeader(http.StatusOK)
	out := bufio.NewWriterSize(deadlineWriter{w: w, rc: http.NewResponseController(w)}, 64<<10)
	sum, size, err := store.EncodeStream(out, run)
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		// The client sees the answer end without its trailers.
		panic(http.ErrAbortHandler)
	}
	w.Header().Set(api.TrailerChecksum, strconv.FormatUint(uint64(sum), 10))
	w.Header().Set(api.TrailerLength, strconv.FormatUint(size, 10))
	w.Header().Set(api.TrailerCodeKept, strconv.Itoa(kept))
	w.Header().Set(api.TrailerCodeFailed, strconv.Itoa(failed))
}

// deadlineWriter gives each write to a client writeTimeout: a client that stops reading
// a streamed answer is dropped, one that reads slowly is not.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.rc.SetWriteDeadline(time.Now().Add(time.Duration(writeTimeout.Load())))
	return d.w.Write(p)
}

func (s *Server) wait(w http.ResponseWriter, r *http.Request) {
	var req api.WaitRequest
	if err := decode(r, &req); err != nil {
		badRequest(w, "%v", err)
		return
	}
	timeout := req.TimeoutMs
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeout)*time.Millisecond)
		defer cancel()
	}
	res := s.rec.Wait(ctx, api.WaitCondition{Samples: uint64(max(req.Samples, 0)), Seconds: req.Seconds, Symbol: req.Symbol})
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	var req api.StopRequest
	if err := decode(r, &req); err != nil {
		badRequest(w, "%v", err)
		return
	}
	s.rec.Stop()
	select {
	case <-s.rec.Done():
	case <-time.After(30 * time.Second):
	}
	writeJSON(w, http.StatusOK, api.Stopped{Run: s.rec.ID(), Schema: api.Schema, Stopped: true})
}

// decode sets req from the query parameters of r: the one place a handler reads them, so
// that each is read by api's codec as its clients wrote it.
func decode(r *http.Request, req api.Request) error { return req.Decode(r.URL.Query()) }

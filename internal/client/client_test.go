package client

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

func saveRun(t *testing.T, id string, finished bool, mod time.Time) {
	t.Helper()
	r := &store.Run{Meta: store.Meta{ID: id, Pid: 1, Finished: finished, Start: mod}}
	if err := store.Save(store.Path(id), r); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(store.Path(id), mod, mod)
}

// TestStaleSocketIsRemoved: a socket nothing listens on (its recorder was killed) is not
// a live run, and the lookup removes it.
func TestStaleSocketIsRemoved(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	dir, err := api.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	path := api.SocketPath(dir, "dead-run")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the stand-in stale socket is missing: %v", err)
	}
	if live := LiveRuns(); len(live) != 0 {
		t.Errorf("a dead socket counted as live: %v", live[0].ID)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale socket was not removed: %v", err)
	}
}

// TestPickSkipsDamagedRuns: the default run is the newest whole one; stored runs are
// listed with their state from the header alone, damaged ones with the reason.
func TestPickSkipsDamagedRuns(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	now := time.Now()
	saveRun(t, "old", true, now.Add(-3*time.Minute))
	saveRun(t, "crashed", false, now.Add(-2*time.Minute))
	os.WriteFile(store.Path("broken"), []byte("STAXRUN\x00 not really"), 0o600)
	os.Chtimes(store.Path("broken"), now, now)

	r, err := Pick("")
	if err != nil || r.ID != "crashed" {
		t.Fatalf("Pick: %v, %v; want the newest whole run, crashed", r, err)
	}
	runs, err := Stored()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].ID != "broken" || runs[0].Err == nil || runs[1].Meta.Finished || !runs[2].Meta.Finished {
		t.Errorf("Stored: %+v", runs)
	}
	if _, err := Pick("no-such-run"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Pick of a missing run: %v", err)
	}
	os.Remove(store.Path("old"))
	os.Remove(store.Path("crashed"))
	if _, err := Pick(""); !errors.Is(err, ErrNotFound) {
		t.Errorf("Pick with only a damaged run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("STAX_HOME"), "runs", "broken.stax")); err != nil {
		t.Errorf("Pick removed a damaged file: %v", err)
	}
}

// saveRunFrom stores a finished run with samples recorded from terminal term.
func saveRunFrom(t *testing.T, id string, term int, samples uint64, mod time.Time) {
	t.Helper()
	r := &store.Run{Meta: store.Meta{ID: id, Pid: 1, Finished: true, Start: mod, Terminal: term, Samples: samples}}
	if err := store.Save(store.Path(id), r); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(store.Path(id), mod, mod)
}

// TestPickPrefersThisTerminalAndSamples: with no run named and none live, the default is
// the newest run with samples started from this terminal, else the newest with samples;
// a newer empty run is passed over and named in the reason; when every run is empty, the
// newest is chosen and the reason says it has none.
func TestPickPrefersThisTerminalAndSamples(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	defer func(old func() int) { thisTerminal = old }(thisTerminal)
	now := time.Now()
	saveRunFrom(t, "here-old", 34817, 500, now.Add(-4*time.Minute))
	saveRunFrom(t, "elsewhere", 34818, 700, now.Add(-3*time.Minute))
	saveRunFrom(t, "no-terminal", 0, 900, now.Add(-2*time.Minute))
	saveRunFrom(t, "here-empty", 34817, 0, now.Add(-1*time.Minute))
	for _, c := range []struct {
		term    int
		id, why string
	}{
		{34817, "here-old", "newest from this terminal with samples; newer run here-empty has none"},
		{34818, "elsewhere", "newest from this terminal"},
		{34819, "no-terminal", "newest with samples; newer run here-empty has none"},
		{0, "no-terminal", "newest with samples; newer run here-empty has none"},
	} {
		thisTerminal = func() int { return c.term }
		r, err := Pick("")
		if err != nil || r.ID != c.id || r.Why != c.why || r.Live {
			t.Errorf("terminal %d: Pick = %+v, %v; want %s because %q", c.term, r, err, c.id, c.why)
		}
	}
	// A damaged file is passed over even when it would be chosen: its header and meta read
	// well, its checksum does not.
	b, err := os.ReadFile(store.Path("no-terminal"))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	os.WriteFile(store.Path("no-terminal"), b, 0o600)
	if _, err := store.ReadMeta(store.Path("no-terminal")); err != nil {
		t.Fatalf("the damaged stand-in's meta does not read: %v", err)
	}
	thisTerminal = func() int { return 0 }
	if r, err := Pick(""); err != nil || r.ID != "elsewhere" {
		t.Errorf("Pick past a damaged file: %+v, %v; want elsewhere", r, err)
	}
	// Named runs are chosen as named, with no reason.
	if r, err := Pick("here-empty"); err != nil || r.ID != "here-empty" || r.Why != "" {
		t.Errorf("Pick(here-empty) = %+v, %v", r, err)
	}
	for _, id := range []string{"here-old", "elsewhere", "no-terminal"} {
		os.Remove(store.Path(id))
	}
	if r, err := Pick(""); err != nil || r.ID != "here-empty" || r.Why != "newest; it has no samples" {
		t.Errorf("Pick among empty runs: %+v, %v", r, err)
	}
}

// TestDependsOnAPIAndStoreOnly: the client talks to recorders through the socket API alone,
// never through the server's or the recorder's code.
func TestDependsOnAPIAndStoreOnly(t *testing.T) {
	// It reads /proc, through proc (and proc's build-id reader), to tell a stopped recorder.
	// spans holds the types of a run's spans, as agg those of its profile; api converts the
	// views' answers (views) to its wire types; proc opens files through targetfile; spans
	// takes its file format from collectorabi; store bounds a tracepoint's format file with
	// tracefmt's limits.
	allowed := map[string]bool{"internal/client": true, "internal/api": true, "internal/store": true, "internal/agg": true, "internal/views": true,
		"internal/spans": true, "internal/proc": true, "internal/symbol/debugfile": true, "internal/targetfile": true,
		"internal/collectorabi": true, "internal/numfmt": true, "internal/tracefmt": true}
	for _, p := range testutil.StaxDeps(t, "./internal/client") {
		if !allowed[p] {
			t.Errorf("internal/client depends on %s", p)
		}
	}
}

// liveRun is a live Run whose recorder is handler, on a socket in a private STAX_HOME.
func liveRun(t *testing.T, id string, handler http.Handler) *Run {
	t.Helper()
	t.Setenv("STAX_HOME", t.TempDir())
	dir, err := api.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	sock := api.SocketPath(dir, id)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return newLive(id, sock, 0)
}

func timedRun() *store.Run {
	p := synthrun.Profile(5000, 50)
	return &store.Run{Meta: store.Meta{ID: "live", Samples: 5000, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Profile: *p}
}

// TestLoadAndSaveStreamTheRun: a live run is read and saved from its recorder's stream,
// checked against the checksum and length that follow it.
func TestLoadAndSaveStreamTheRun(t *testing.T) {
	want := timedRun()
	r := liveRun(t, "live", server.Handler(server.Stored(want), true))
	got, err := r.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load changed the run")
	}
	path := filepath.Join(t.TempDir(), "sub", "live.stax")
	saved, err := r.Save(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Check(path); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	back, err := store.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Meta.Samples != 5000 || saved.Size != info.Size() || back.Profile.Series.Len() != 5000 || !reflect.DeepEqual(back.Profile.Entries, want.Profile.Entries) {
		t.Errorf("saved %+v (file of %d bytes), read back %d samples", saved, info.Size(), back.Profile.Series.Len())
	}
	if n := back.Meta.Notes; len(n) != 1 || !strings.Contains(n[0], "still recording") {
		t.Errorf("notes of a run saved while recording: %q", n)
	}
	if len(want.Meta.Notes) != 0 {
		t.Errorf("saving changed the recorder's run: %q", want.Meta.Notes)
	}
}

// TestBrokenAnswersAreErrors: an answer cut short or damaged on its way is an error, and
// no file is left behind.
func TestBrokenAnswersAreErrors(t *testing.T) {
	var good bytes.Buffer
	sum, size, err := store.EncodeStream(&good, timedRun())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   string
	}{
		{"cut short", func(w http.ResponseWriter) {
			w.Write(good.Bytes()[:good.Len()/2])
			panic(http.ErrAbortHandler)
		}, "cut short"},
		{"no trailers", func(w http.ResponseWriter) { w.Write(good.Bytes()) }, "cut short"},
		{"wrong checksum", func(w http.ResponseWriter) {
			w.Header().Set("Trailer", api.TrailerChecksum+", "+api.TrailerLength)
			w.Write(good.Bytes())
			w.Header().Set(api.TrailerChecksum, strconv.FormatUint(uint64(sum^1), 10))
			w.Header().Set(api.TrailerLength, strconv.FormatUint(size, 10))
		}, "damaged on its way"},
		{"an error", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":"encode run: out of memory"}`))
		}, "encode run: out of memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := liveRun(t, "broken", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { c.answer(w) }))
			dir := t.TempDir()
			if _, err := r.Save(context.Background(), filepath.Join(dir, "x.stax")); err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrGone) {
				t.Errorf("Save: %v, want an error that says %q", err, c.want)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("a failed save left %s", ents[0].Name())
			}
			if _, err := r.Load(context.Background()); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load: %v, want an error that says %q", err, c.want)
			}
		})
	}
}

// TestGoneRecorder: a socket that is gone, or that nothing listens on any more, is
// ErrGone; an answer, even an error, is not.
func TestGoneRecorder(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	dir, err := api.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	stale := api.SocketPath(dir, "dead")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	for _, sock := range []string{stale, api.SocketPath(dir, "removed")} {
		r := newLive("dead", sock, 0)
		var st api.Status
		if err := r.Get(context.Background(), "/v1/status", nil, &st); !errors.Is(err, ErrGone) {
			t.Errorf("Get on %s: %v, want ErrGone", sock, err)
		}
		if _, err := r.Load(context.Background()); !errors.Is(err, ErrGone) {
			t.Errorf("Load on %s: %v, want ErrGone", sock, err)
		}
	}
	r := liveRun(t, "failing", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":"out of memory"}`))
	}))
	var st api.Status
	err = r.Get(context.Background(), "/v1/status", nil, &st)
	if ae := (*AnswerError)(nil); !errors.As(err, &ae) || ae.Code != http.StatusInternalServerError || ae.Msg != "out of memory" || errors.Is(err, ErrGone) {
		t.Errorf("Get of a failing recorder: %v", err)
	}
}

// TestBusyRecorderIsAskedAgain: a recorder answering too many clients says 503, and a
// query is asked again until it is answered; a recorder that never has room is given up
// on when the query's time runs out.
func TestBusyRecorderIsAskedAgain(t *testing.T) {
	var asked atomic.Int64
	r := liveRun(t, "busy", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if asked.Add(1) <= 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":"the recorder is answering too many clients; try again shortly"}`))
			return
		}
		w.Write([]byte(`{"samples":7}`))
	}))
	var got struct{ Samples int }
	if err := r.Get(context.Background(), "/v1/status", nil, &got); err != nil || got.Samples != 7 || asked.Load() != 4 {
		t.Errorf("Get after three 503s: %v, %+v, asked %d times; want the fourth answer", err, got, asked.Load())
	}

	defer func(old time.Duration) { BusyRetryFor = old }(BusyRetryFor)
	BusyRetryFor = 300 * time.Millisecond
	asked.Store(0)
	always := liveRun(t, "full", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"the recorder is answering too many clients; try again shortly"}`))
	}))
	err := always.Get(context.Background(), "/v1/status", nil, &got)
	if ae := (*AnswerError)(nil); !errors.As(err, &ae) || ae.Code != http.StatusServiceUnavailable || !strings.Contains(ae.Msg, "try again") || asked.Load() < 2 {
		t.Errorf("Get from a recorder that is always busy: %v after %d tries; want its answer, after asking again", err, asked.Load())
	}
}

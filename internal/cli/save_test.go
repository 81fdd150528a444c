package cli

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
)

// checkpoint stores a small unfinished run id, as a recorder's checkpoint, ended at end.
func checkpoint(t *testing.T, id string, finished bool, end time.Time) {
	t.Helper()
	r := fixtureRun(id, finished)
	r.Meta.Samples, r.Meta.End = 1, end
	if err := store.Save(store.Path(id), r); err != nil {
		t.Fatal(err)
	}
}

// serveLive answers queries about run as its live recorder would, on its socket.
func serveLive(t *testing.T, run *store.Run) *server.Server {
	t.Helper()
	srv, err := server.Listen(server.Stored(run))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(srv.Close)
	return srv
}

// bigRun is a run whose JSON answer is over the 64 MiB a recorder holds for its clients:
// 17,472,000 samples in 800 chunks of 64 KiB (a 4 KiB pattern repeated, so that it is
// cheap to make and to compress, about 15-fold).
func bigRun(id string) *store.Run {
	rng := rand.New(rand.NewPCG(3, 4))
	const perChunk = 16 * 1365 // of 3 bytes: time delta, key 0, CPU
	var pattern []byte
	for range 1365 {
		pattern = append(pattern, byte(2*(1+rng.IntN(63))), 0, byte(rng.IntN(128)))
	}
	data := bytes.Repeat(pattern, 16)
	r := fixtureRun(id, false)
	r.Profile.KeyEntry = []int32{0}
	for i := range 800 {
		t := uint64(i) * 1e9
		r.Profile.Series.Chunks = append(r.Profile.Series.Chunks, agg.SeriesChunk{Base: t, Min: t, Max: t + 1e8, N: perChunk, Data: data})
	}
	r.Meta.Samples = r.Profile.Series.Len()
	return r
}

// TestSaveStreamsALiveRun: stax save of a live run whose JSON answer the recorder would
// refuse as too large writes the run as it is now, not its last checkpoint.
func TestSaveStreamsALiveRun(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	checkpoint(t, "big", false, time.Now())
	serveLive(t, bigRun("big"))
	path := filepath.Join(t.TempDir(), "big.stax")
	var out, errOut bytes.Buffer
	if code := Main([]string{"save", path}, &out, &errOut); code != 0 {
		t.Fatalf("save: exit %d: %s", code, errOut.String())
	}
	if errOut.Len() != 0 {
		t.Errorf("save of a live run said %q", errOut.String())
	}
	if err := store.Check(path); err != nil {
		t.Fatal(err)
	}
	m, err := store.ReadMeta(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Samples != 17_472_000 || !strings.Contains(out.String(), "17,472,000 samples") {
		t.Errorf("saved %d samples (%s), want the live run's 17,472,000", m.Samples, out.String())
	}
	if n := m.Notes; len(n) == 0 || !strings.Contains(n[len(n)-1], "still recording") {
		t.Errorf("a run saved while recording has notes %q", n)
	}
}

// failingRecorder answers every request on run id's socket with status code and message.
func failingRecorder(t *testing.T, id string, code int, msg string) {
	t.Helper()
	dir, err := api.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", api.SocketPath(dir, id))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write([]byte(`{"error":"` + msg + `"}`))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// TestRecorderErrorsAreNotHidden: when the live recorder answers with an error, stax says
// so and fails; it never answers from the stored checkpoint instead.
func TestRecorderErrorsAreNotHidden(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	checkpoint(t, "busy", false, time.Now())
	const msg = "the recorder holds too many unread answers; try again shortly"
	defer func(old time.Duration) { client.BusyRetryFor = old }(client.BusyRetryFor)
	client.BusyRetryFor = 0
	failingRecorder(t, "busy", http.StatusServiceUnavailable, msg)
	path := filepath.Join(t.TempDir(), "busy.stax")
	for _, args := range [][]string{
		{"save", "--run", "busy", path},
		{"top", "--run", "busy"},
		{"status", "--run", "busy"},
		{"annotate", "--run", "busy", "jitted_func1"},
		{"export", "--run", "busy", "--format", "folded", "-o", "-"},
	} {
		var out, errOut bytes.Buffer
		code := Main(args, &out, &errOut)
		if code == 0 || !strings.Contains(errOut.String(), msg) || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("stax %v: exit %d, stderr %q; want a failure that says %q", args, code, errOut.String(), msg)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed save left %s: %v", path, err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 0 {
		t.Errorf("a failed save left %s", ents[0].Name())
	}
}

// TestRecorderGoneFallsBackAndSaysSo: a run whose recorder finishes between being found
// and being asked is answered from its stored copy, and stax says which copy, from when.
func TestRecorderGoneFallsBackAndSaysSo(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	end := time.Date(2026, 11, 1, 12, 3, 4, 0, time.Local)
	for _, c := range []struct {
		finished bool
		want     string
	}{
		{true, "stax: run gone finished while saving; saved its stored copy (finished at 12:03:04)\n"},
		{false, "stax: the recorder of run gone ended without finishing while saving; saved its last checkpoint (from 12:03:04)\n"},
	} {
		checkpoint(t, "gone", c.finished, end)
		srv := serveLive(t, bigRun("gone"))
		r, err := client.Pick("gone")
		if err != nil || !r.Live {
			t.Fatalf("Pick: %+v, %v", r, err)
		}
		srv.Close() // the recording ends
		var out, errOut bytes.Buffer
		g := &globals{out: &out, errOut: &errOut}
		path := filepath.Join(t.TempDir(), "gone.stax")
		if err := save(context.Background(), g, r, path); err != nil {
			t.Fatal(err)
		}
		if errOut.String() != c.want {
			t.Errorf("save said %q, want %q", errOut.String(), c.want)
		}
		if m, err := store.ReadMeta(path); err != nil || m.Samples != 1 {
			t.Errorf("saved %+v, %v; want the stored copy", m, err)
		}

		errOut.Reset()
		st, err := ask(context.Background(), g, r, "/v1/status", nil, store.MetaOnly, func(run *store.Run) (api.Status, error) { return api.StatusOf(run), nil })
		if err != nil || st.Meta.Samples != 1 || !strings.Contains(errOut.String(), "while asking; answered from its") {
			t.Errorf("ask: %v, %d samples, said %q", err, st.Meta.Samples, errOut.String())
		}
		errOut.Reset()
		if run, err := readRun(context.Background(), g, r, store.All); err != nil || run.Meta.Samples != 1 || !strings.Contains(errOut.String(), "while reading it; read its") {
			t.Errorf("readRun: %v, said %q", err, errOut.String())
		}
	}
}

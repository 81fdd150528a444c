package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/push/pushtest"
	"github.com/stax-profiler/stax/internal/testutil"
)

func buildToyJIT(t *testing.T) string {
	t.Helper()
	toy := filepath.Join(t.TempDir(), "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")
	return toy
}

// checkPushedRatio checks that the pushed samples of the toy JIT's two functions are in
// its 1:2 ratio (within 10%) and are the stored run's: none lost, none twice.
func checkPushedRatio(t *testing.T, e *staxEnv, a, b int64) {
	t.Helper()
	var top api.Top
	e.mustJSON(&top, "top", "-n", "100", "--sort", "self")
	// Pushed samples are summed by their leaf's function name: so are the stored run's
	// rows, one per function and image.
	var sa, sb uint64
	for _, r := range top.Rows {
		switch r.Func {
		case "jitted_func1":
			sa += r.Self
		case "jitted_func2":
			sb += r.Self
		}
	}
	t.Logf("pushed jitted_func1 %d, jitted_func2 %d; stored %d, %d", a, b, sa, sb)
	if a+b < 1000 {
		t.Fatalf("too few pushed samples to judge: %d", a+b)
	}
	if r := float64(b) / float64(a); r < 1.8 || r > 2.2 {
		t.Errorf("pushed jitted_func2/jitted_func1 = %.2f, want 2 ± 10%%", r)
	}
	if a != int64(sa) || b != int64(sb) {
		t.Errorf("pushed %d and %d samples, the stored run has %d and %d", a, b, sa, sb)
	}
}

// TestPushPyroscopeToyJIT records the toy JIT pushing every second to a loopback server
// that checks each request as Pyroscope's ingest API documents it.
func TestPushPyroscopeToyJIT(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	toy := buildToyJIT(t)
	srv := pushtest.NewPyroscope()
	defer srv.Close()
	out, errOut, code := e.run("record", "-q", "--push", "pyroscope+"+srv.URL, "--push-every", "1s", "--service", "toyjit",
		"--", toy, "-cpu", "3s")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	defer removeJITFiles(t, e)
	ins, refused := srv.Ingests()
	if len(refused) > 0 {
		t.Fatalf("the server refused requests: %q", refused)
	}
	if len(ins) < 2 {
		t.Fatalf("%d pushes, want one a second", len(ins))
	}
	var a, b int64
	for i, in := range ins {
		if !strings.HasPrefix(in.Name, "toyjit{") || in.SampleRate != 999 {
			t.Errorf("push %d: name %q, sampleRate %d", i, in.Name, in.SampleRate)
		}
		if i > 0 && in.From < ins[i-1].From {
			t.Errorf("push %d starts at %d, before push %d (%d)", i, in.From, i-1, ins[i-1].From)
		}
		got := pushtest.SamplesByLeaf(in.Profile)
		a += got["jitted_func1"]
		b += got["jitted_func2"]
	}
	checkPushedRatio(t, e, a, b)
}

// TestPushEndpointFailing: an endpoint that answers 500, or never answers, costs the
// recording nothing: status answers, shows the error on one line, and no sample is lost.
func TestPushEndpointFailing(t *testing.T) {
	testutil.RequirePerf(t)
	toy := buildToyJIT(t)
	var release chan struct{}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "store\nis down", 500) }, "500"},
		{"hang", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}, "Timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			release = make(chan struct{})
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			defer close(release)
			rec := e.startRecordUntilReady(t.TempDir(), []string{"--push", "otlp+" + srv.URL, "--push-every", "1s", "--push-timeout", "1s"},
				toy, "-cpu", "2s", "-wait")
			defer removeJITFiles(t, e)
			var st api.Status
			for deadline := time.Now().Add(60 * time.Second); ; {
				e.mustJSON(&st, "status")
				if st.Push != nil && st.Push.Failed > 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no failed push in status: %+v", st.Push)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if st.Push.Pushed != 0 || st.Push.Queued == 0 || !strings.Contains(st.Push.LastError, tc.want) || strings.Contains(st.Push.LastError, "\n") {
				t.Errorf("push status %+v: want nothing pushed, windows queued, and a one-line error with %q", st.Push, tc.want)
			}
			txt, _, _ := e.run("status")
			if !strings.Contains(txt, "push error: ") || !strings.Contains(txt, "push:      otlp+http://127.0.0.1:") {
				t.Errorf("status text lacks the push lines:\n%s", txt)
			}
			rec.finish(t)
			if !strings.Contains(rec.out.String(), "windows not sent") {
				t.Errorf("record did not say what was left unsent:\n%s", rec.out.String())
			}
			var top api.Top
			e.mustJSON(&top, "top", "-n", "20", "--sort", "self")
			a, b, pctB := share(top, "jitted_func1", "jitted_func2")
			tol := shareTolerance(2.0/3, a+b)
			if a+b < 1000 || pctB < 200.0/3-tol || pctB > 200.0/3+tol {
				t.Errorf("jitted_func2 share %.1f%% of %d samples, want 66.7 ± %.1f of about 2,000", pctB, a+b, tol)
			}
		})
	}
}

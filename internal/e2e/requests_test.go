package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// storedAnswers answers each request kind (by path) from a stored run, as the CLI does.
var storedAnswers = map[string]func(*store.Run, api.Request) (any, error){
	"/v1/top":   func(r *store.Run, q api.Request) (any, error) { return query.AnswerTop(r, *q.(*api.TopRequest)) },
	"/v1/flame": func(r *store.Run, q api.Request) (any, error) { return query.AnswerFlame(r, *q.(*api.FlameRequest)) },
	"/v1/callers": func(r *store.Run, q api.Request) (any, error) {
		return query.AnswerCallers(r, *q.(*api.CallersRequest))
	},
	"/v1/callees": func(r *store.Run, q api.Request) (any, error) {
		return query.AnswerCallers(r, *q.(*api.CallersRequest))
	},
	"/v1/threads": func(r *store.Run, q api.Request) (any, error) {
		return query.AnswerThreads(r, *q.(*api.ThreadsRequest))
	},
	"/v1/timeline": func(r *store.Run, q api.Request) (any, error) {
		return query.AnswerTimeline(r, *q.(*api.TimelineRequest))
	},
	"/v1/thread_states": func(r *store.Run, q api.Request) (any, error) {
		return query.AnswerThreadStates(r, *q.(*api.TimelineRequest))
	},
	"/v1/wakers": func(r *store.Run, q api.Request) (any, error) { return query.AnswerWakers(r, *q.(*api.WakersRequest)) },
	"/v1/annotate": func(r *store.Run, q api.Request) (any, error) {
		return query.AnswerAnnotate(r, *q.(*api.AnnotateRequest))
	},
	"/v1/spans": func(r *store.Run, q api.Request) (any, error) { return query.AnswerSpans(r, *q.(*api.SpansRequest)) },
	"/v1/samples": func(r *store.Run, q api.Request) (any, error) {
		return query.AnswerSamples(r, *q.(*api.SamplesRequest))
	},
	"/v1/stack_chart": func(r *store.Run, q api.Request) (any, error) {
		return query.AnswerStackChart(r, *q.(*api.StackChartRequest))
	},
}

// sameAnswer compares a live answer's JSON with a stored one's, but for their liveness.
func sameAnswer(t *testing.T, what string, live json.RawMessage, stored any) {
	t.Helper()
	b, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	var l, s map[string]any
	if err := json.Unmarshal(live, &l); err != nil {
		t.Fatalf("%s: live answer %.200s: %v", what, live, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	delete(l, "live")
	delete(l, "state")
	delete(s, "live")
	delete(s, "state")
	if !reflect.DeepEqual(l, s) {
		lb, _ := json.Marshal(l)
		sb, _ := json.Marshal(s)
		t.Errorf("%s: the live answer differs from the stored one:\nlive   %.600s\nstored %.600s", what, lb, sb)
	}
}

// TestRequestsLiveAndStored records a program that waits (off CPU: a lock, a sleep, a
// pipe), and serves the saved run as a live recorder does, on its socket. Every
// parameter of every request, one at a time and set to a value that is not its default,
// is answered the same by the socket (encoded, decoded by the server) and by the stored
// path (query, as the CLI answers a stored run): a parameter one path drops fails here. A
// parameter with no value in the table below fails too, so a new one is tested. Then the
// CLI's callers and callees in the time modes answer the same live and stored.
func TestRequestsLiveAndStored(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := buildOffCPU(t, t.TempDir())
	if out, errOut, code := e.run("record", "-q", "--", prog, "waits", "1"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	saved := filepath.Join(t.TempDir(), "waits.stax")
	if out, errOut, code := e.run("save", saved); code != 0 {
		t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
	}
	run, err := store.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	worker := uint32(0)
	for _, th := range run.Profile.Threads {
		if th.Name == "worker" {
			worker = th.Tid
		}
	}
	if worker == 0 || run.OffCPU == nil {
		t.Fatalf("the run has no thread named worker (%+v) or no off-CPU time", run.Profile.Threads)
	}
	// A value for each parameter, valid for this run, that is not its default.
	values := map[string]string{
		"n": "3", "sort": "total", "by": "line", "inline": "0", "short": "1", "tid": strconv.Itoa(int(worker)),
		"pid": strconv.Itoa(run.Meta.Pid), "comm": "offcpu", "from": "0.1", "to": "-0.05", "span": "no_such_span",
		"focus": "worker", "ignore": "nap", "hide": "start_thread", "collapse_image": "libc.so.6", "fold_recursion": "1", "python": "1",
		"off_cpu": "1", "wall": "1", "runnable": "1", "depth": "4", "threshold_pct": "5", "inverted": "1", "match": "wait",
		"fn": "wait_for_lock", "functions": "2", "bucket_ms": "50", "buckets": "30", "threads": "2", "stacks": "1",
		"target": "worker", "version": "1", "syntax": "intel", "under": "start_thread", "callers_of": "wait_for_lock",
		"callees_of": "worker", "width": "300", "event": "cpu-clock", "weight": "count",
	}

	t.Setenv("STAX_HOME", e.home)
	srv, err := server.Listen(server.Stored(run))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Close()
	live, err := client.Pick(run.Meta.ID)
	if err != nil || !live.Live {
		t.Fatalf("the run served is not live: %+v, %v", live, err)
	}

	asked := 0
	for _, req := range api.Requests() {
		if req.Path() == "/v1/wait" {
			continue // not a query of the run's contents
		}
		answer := storedAnswers[req.Path()]
		if answer == nil {
			t.Errorf("%s: no stored answer in the test's table", req.Path())
			continue
		}
		for _, name := range api.ParamNames(req) {
			v, ok := values[name]
			if !ok {
				t.Errorf("%s: parameter %s has no value in the test's table", req.Path(), name)
				continue
			}
			// The required parameters, the one tested, the defaults.
			q := url.Values{"fn": {values["fn"]}, "target": {values["target"]}}
			if req.Path() == "/v1/samples" {
				q.Set("event", values["event"]) // required (a run without tracepoints: refused alike)
			}
			q.Set(name, v)
			one := reflect.New(reflect.TypeOf(req).Elem()).Interface().(api.Request)
			reflect.ValueOf(one).Elem().Set(reflect.ValueOf(req).Elem()) // the fields the path says
			if err := one.Decode(q); err != nil {
				t.Fatalf("%s %v: %v", req.Path(), q, err)
			}
			what := fmt.Sprintf("%s?%s", one.Path(), one.Encode().Encode())
			var got json.RawMessage
			liveErr := live.Get(context.Background(), one.Path(), one.Encode(), &got)
			want, storedErr := answer(run, one)
			asked++
			switch {
			case liveErr != nil || storedErr != nil:
				if storedErr == nil || liveErr == nil || !strings.Contains(liveErr.Error(), storedErr.Error()) {
					t.Errorf("%s: live error %v, stored error %v", what, liveErr, storedErr)
				}
			default:
				sameAnswer(t, what, got, want)
			}
		}
	}
	t.Logf("%d requests answered alike live and stored", asked)

	// The CLI, live (the socket) and stored (the file), in the time modes.
	for _, args := range [][]string{
		{"callers", "wait_for_lock", "--off-cpu"},
		{"callers", "wait_for_lock", "--wall"},
		{"callees", "worker", "--off-cpu", "--tid", strconv.Itoa(int(worker))},
		{"callees", "worker", "--wall"},
		{"top", "--off-cpu", "--by", "line"},
		{"flame", "--wall", "--inverted"},
	} {
		var l, s json.RawMessage
		e.mustJSON(&l, append(args, "--run", run.Meta.ID)...)
		e.mustJSON(&s, append(args, "--run", saved)...)
		var stored any
		json.Unmarshal(s, &stored)
		sameAnswer(t, strings.Join(args, " "), l, stored)
		if args[0] == "callers" || args[0] == "callees" {
			var c api.Callers
			json.Unmarshal(l, &c)
			if !c.OffCPU || c.Samples == 0 || len(c.Functions) == 0 || c.Time == nil {
				t.Errorf("%s: answer not weighed by time: off_cpu %v, %d ns, %d functions, time %+v", strings.Join(args, " "), c.OffCPU, c.Samples, len(c.Functions), c.Time)
			}
		}
	}
	// In off-CPU mode wait_for_lock's callers count the ~700 ms it waited, not its samples.
	var c api.Callers
	e.mustJSON(&c, "callers", "wait_for_lock", "--off-cpu", "--run", saved)
	if len(c.Functions) == 0 || c.Functions[0].Total < 500e6 {
		t.Errorf("callers --off-cpu: wait_for_lock waited %+v, want >= 500 ms", c.Functions)
	}
}

package web

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/server"
)

// seenSource is a source that keeps the last request it was asked.
type seenSource struct {
	Source
	mu   sync.Mutex
	path string
	q    url.Values
}

func (s *seenSource) Get(ctx context.Context, path string, q url.Values) ([]byte, int) {
	s.mu.Lock()
	s.path, s.q = path, q
	s.mu.Unlock()
	return s.Source.Get(ctx, path, q)
}

// TestProxyPassesEveryParameter asks each of the page's API routes with every parameter of
// its request set to a value that is not its default: the page's server passes each on to
// the run's socket API as it came (the callers panel once lost off_cpu and wall there).
func TestProxyPassesEveryParameter(t *testing.T) {
	seen := &seenSource{Source: HandlerSource{server.Handler(server.Stored(smallRun()), false), true}}
	s, err := Listen(seen, Options{})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	base, token, _ := strings.Cut(s.URL(), "/?token=")
	values := map[string]string{
		"n": "3", "sort": "total", "by": "line", "inline": "0", "short": "1", "tid": "101", "pid": "7", "comm": "app",
		"from": "0.1", "to": "-0.05", "span": "s", "focus": "f", "ignore": "i", "hide": "h", "collapse_image": "libc.so.6",
		"fold_recursion": "1", "python": "1", "off_cpu": "1", "wall": "1", "runnable": "1", "depth": "4", "threshold_pct": "5",
		"inverted": "1", "match": "m", "fn": "func_1", "functions": "2", "bucket_ms": "50", "buckets": "30", "threads": "2",
		"stacks": "1", "target": "func_1", "version": "1", "syntax": "intel", "under": "func_1", "callers_of": "c", "callees_of": "e", "width": "640", "event": "cpu-clock", "weight": "count",
	}
	for page, req := range map[string]api.Request{
		"top": &api.TopRequest{}, "flame": &api.FlameRequest{}, "callers": &api.CallersRequest{}, "callees": &api.CallersRequest{Callees: true},
		"threads": &api.ThreadsRequest{}, "timeline": &api.TimelineRequest{}, "thread_states": &api.TimelineRequest{States: true},
		"wakers": &api.WakersRequest{}, "annotate": &api.AnnotateRequest{}, "stack_chart": &api.StackChartRequest{},
		"samples": &api.SamplesRequest{},
	} {
		q := url.Values{}
		for _, name := range api.ParamNames(req) {
			v, ok := values[name]
			if !ok {
				t.Fatalf("/api/%s: parameter %s has no value in the test's table", page, name)
			}
			q.Set(name, v)
		}
		if err := req.Decode(q); err != nil {
			t.Fatalf("/api/%s?%s: %v", page, q.Encode(), err)
		}
		want := req.Encode()
		if len(want) != len(q) {
			t.Fatalf("/api/%s: %d of %d parameters are not at their defaults: %v", page, len(want), len(q), want)
		}
		resp, err := http.Get(base + "/api/" + page + "?token=" + token + "&" + want.Encode())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen.mu.Lock()
		path, got := seen.path, seen.q
		seen.path, seen.q = "", nil
		seen.mu.Unlock()
		if path != req.Path() || !reflect.DeepEqual(got, want) {
			t.Errorf("/api/%s (answered %d %.100s) asked %s?%s, want %s?%s", page, resp.StatusCode, body, path, got.Encode(), req.Path(), want.Encode())
		}
	}
	// A bad parameter is named, as the socket API names it.
	resp, err := http.Get(base + "/api/callers?token=" + token + "&fn=x&n=many")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `parameter n: \"many\" is not a number`) {
		t.Errorf("/api/callers?n=many: %d %s", resp.StatusCode, body)
	}
}

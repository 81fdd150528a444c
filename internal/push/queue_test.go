package push

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func req(seq uint64) Request {
	return Request{Seq: seq, Path: "/v1development/profiles", ContentType: "application/x-protobuf", Body: []byte("window " + strconv.FormatUint(seq, 10))}
}

func TestQueueBoundDropsOldest(t *testing.T) {
	q, err := OpenQueue(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 5; seq++ {
		if err := q.Put(req(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if q.Len() != 3 || q.Dropped() != 2 {
		t.Fatalf("len %d dropped %d, want 3 and 2", q.Len(), q.Dropped())
	}
	r, ok := q.Peek()
	if !ok || r.Seq != 3 || string(r.Body) != "window 3" {
		t.Fatalf("oldest %d %q, want window 3", r.Seq, r.Body)
	}
}

func TestQueueKeepsRequestsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenQueue(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		q.Put(req(seq))
	}
	q.Remove(1)
	q2, err := OpenQueue(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if q2.Len() != 2 || q2.Last() != 3 {
		t.Fatalf("reopened: len %d last %d, want 2 and 3", q2.Len(), q2.Last())
	}
	if r, _ := q2.Peek(); r.Seq != 2 || r.Path != "/v1development/profiles" || r.ContentType != "application/x-protobuf" {
		t.Fatalf("reopened oldest: %+v", r)
	}
}

// recorder is a loopback endpoint that fails while down and records what it took.
type endpoint struct {
	mu   sync.Mutex
	down bool
	got  []string
	hits int
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hits++
	if e.down {
		http.Error(w, "collector restarting", http.StatusServiceUnavailable)
		return
	}
	e.got = append(e.got, string(b))
}

func (e *endpoint) received() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

func target(t *testing.T, url string) Target {
	t.Helper()
	tg, err := ParseTarget("otlp+" + url)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestSenderResendsInOrderAfterOutage: while the endpoint fails, windows wait and are
// retried; once it is back, each arrives once, in order.
func TestSenderResendsInOrderAfterOutage(t *testing.T) {
	ep := &endpoint{down: true}
	srv := httptest.NewServer(ep)
	defer srv.Close()
	q, err := OpenQueue(t.TempDir(), 100)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSender(target(t, srv.URL), nil, time.Second, q)
	s.MinBackoff, s.MaxBackoff = time.Millisecond, 20*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	for seq := uint64(1); seq <= 5; seq++ {
		q.Put(req(seq))
	}
	for deadline := time.Now().Add(10 * time.Second); s.Counts().Failed < 3; {
		if time.Now().After(deadline) {
			t.Fatal("the sender did not retry")
		}
		time.Sleep(time.Millisecond)
	}
	if n := q.Len(); n != 5 {
		t.Fatalf("%d windows queued while down, want 5", n)
	}
	if c := s.Counts(); !strings.Contains(c.LastError, "503") || strings.Contains(c.LastError, "\n") {
		t.Errorf("last error %q: want the 503, on one line", c.LastError)
	}
	ep.mu.Lock()
	ep.down = false
	ep.mu.Unlock()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	cancel()
	if !s.Drain(dctx) {
		t.Fatal("queue did not drain")
	}
	got := ep.received()
	want := []string{"window 1", "window 2", "window 3", "window 4", "window 5"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("received %q, want %q", got, want)
	}
	if c := s.Counts(); c.Pushed != 5 {
		t.Errorf("pushed %d, want 5", c.Pushed)
	}
}

// TestSenderRefusedIsDropped: a 400 is not retried (it would block the queue forever).
func TestSenderRefusedIsDropped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad profile", http.StatusBadRequest)
	}))
	defer srv.Close()
	q, _ := OpenQueue(t.TempDir(), 10)
	q.Put(req(1))
	s := NewSender(target(t, srv.URL), nil, time.Second, q)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !s.Drain(ctx) {
		t.Fatal("a refused window stayed queued")
	}
	if c := s.Counts(); c.Refused != 1 || c.Pushed != 0 {
		t.Errorf("counts %+v, want 1 refused", c)
	}
}

// TestSenderHangingEndpoint: an endpoint that never answers costs one timeout per attempt
// and leaves queueing free.
func TestSenderHangingEndpoint(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	q, _ := OpenQueue(t.TempDir(), 10)
	s := NewSender(target(t, srv.URL), nil, 100*time.Millisecond, q)
	s.MinBackoff = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	for seq := uint64(1); seq <= 20; seq++ {
		q.Put(req(seq))
	}
	for deadline := time.Now().Add(10 * time.Second); s.Counts().Failed < 2; {
		if time.Now().After(deadline) {
			t.Fatal("no attempt timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if q.Len() != 10 || q.Dropped() != 10 {
		t.Errorf("queued %d dropped %d, want 10 and 10", q.Len(), q.Dropped())
	}
	if c := s.Counts(); !strings.Contains(c.LastError, "Timeout") && !strings.Contains(c.LastError, "deadline") {
		t.Errorf("last error %q: want a timeout", c.LastError)
	}
}

func TestHeadersAndBasicAuth(t *testing.T) {
	var auth, custom string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, custom = r.Header.Get("Authorization"), r.Header.Get("X-Scope-OrgID")
	}))
	defer srv.Close()
	h, err := ParseHeaders([]string{"Authorization=Bearer s3cret", "X-Scope-OrgID=team-a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Send(context.Background(), target(t, srv.URL), h, time.Second, req(1)); err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer s3cret" || custom != "team-a" {
		t.Errorf("headers %q %q", auth, custom)
	}
	tg := target(t, strings.Replace(srv.URL, "http://", "http://user:pw@", 1))
	if err := Send(context.Background(), tg, nil, time.Second, req(1)); err != nil {
		t.Fatal(err)
	}
	if auth != "Basic dXNlcjpwdw==" {
		t.Errorf("basic auth header %q", auth)
	}
	if s := tg.String(); strings.Contains(s, "pw") {
		t.Errorf("target %q shows the password", s)
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct{ in, proto, base string }{
		{"otlp+http://127.0.0.1:4318", "otlp", "http://127.0.0.1:4318"},
		{"otlp+https://collector.example:4318/otlp/", "otlp", "https://collector.example:4318/otlp"},
		{"pyroscope+http://127.0.0.1:4040", "pyroscope", "http://127.0.0.1:4040"},
	} {
		tg, err := ParseTarget(tc.in)
		if err != nil || string(tg.Protocol) != tc.proto || tg.Base.String() != tc.base {
			t.Errorf("%s: %v %v %v", tc.in, tg.Protocol, tg.Base, err)
		}
	}
	for _, bad := range []string{"http://127.0.0.1:4318", "otlp+ftp://h", "parca+http://h", "otlp+http://", "otlp+http://h:4318 x"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseHeaders([]string{"novalue"}); err == nil {
		t.Error("header without = accepted")
	}
}

// TestSenderStoppedWhileSendingThenDrained: a sender stopped with a request in flight and
// drained at once sends that request once. A drain that does not wait for the stopped run
// sends it again while the first attempt is still waiting for its reply.
func TestSenderStoppedWhileSendingThenDrained(t *testing.T) {
	arrived := make(chan struct{}, 10)
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		arrived <- struct{}{}
		<-release
	}))
	defer srv.Close()
	q, err := OpenQueue(t.TempDir(), 10)
	if err != nil {
		t.Fatal(err)
	}
	q.Put(req(1))
	s := NewSender(target(t, srv.URL), nil, 10*time.Second, q)
	ctx, cancel := context.WithCancel(context.Background())
	go s.Run(ctx)
	<-arrived
	cancel()
	drained := make(chan bool)
	go func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		drained <- s.Drain(dctx)
	}()
	select {
	case <-arrived:
		t.Error("the drain sent window 1 while the stopped run's attempt was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if !<-drained {
		t.Fatal("queue did not drain")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Errorf("received %q, want window 1 once", got)
	}
}

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// fakeRecording stands in for a recorder: a fixed run, a wait that blocks until its
// context ends or the run is stopped.
type fakeRecording struct {
	run      *store.Run
	stopOnce sync.Once
	done     chan struct{}
}

func newFake(frames int) *fakeRecording {
	p := agg.Profile{}
	for i := range frames {
		p.Frames = append(p.Frames, agg.Frame{Func: fmt.Sprintf("func_%d", i), Image: "/bin/app", Kind: agg.KindUser})
		p.Stacks = append(p.Stacks, []uint32{uint32(i)})
		p.Entries = append(p.Entries, agg.Entry{Tid: 1, Pid: 1, Stack: uint32(i), Count: uint64(i + 1), LeafFunc: int32(i)})
	}
	p.Threads = []agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}}
	p.LocateFrameStacks()
	return &fakeRecording{
		run:  &store.Run{Meta: store.Meta{ID: "run-1", Pid: 1, Freq: 999, Samples: uint64(frames * (frames + 1) / 2)}, Profile: p},
		done: make(chan struct{}),
	}
}

func (f *fakeRecording) ID() string           { return f.run.Meta.ID }
func (f *fakeRecording) Snapshot() *store.Run { return f.run }
func (f *fakeRecording) Status() api.Status {
	st := api.StatusOf(f.run)
	st.Live, st.State = true, api.StateLive
	return st
}
func (f *fakeRecording) Wait(ctx context.Context, cond api.WaitCondition) api.Wait {
	select {
	case <-ctx.Done():
		return api.Wait{Schema: api.Schema, Run: f.ID(), Outcome: api.WaitTimeout}
	case <-f.done:
		return api.Wait{Schema: api.Schema, Run: f.ID(), Outcome: api.WaitEnded}
	}
}
func (f *fakeRecording) Stop()                 { f.stopOnce.Do(func() { close(f.done) }) }
func (f *fakeRecording) Done() <-chan struct{} { return f.done }

// serve starts a server for rec in a private STAX_HOME, with a connection cap when
// maxConns > 0, and returns a client for it.
func serve(t *testing.T, rec Recording, maxConns int) (*Server, *http.Client) {
	t.Helper()
	s := listen(t, rec, maxConns)
	go s.Serve()
	t.Cleanup(s.Close)
	return s, clientOf(s)
}

// listen makes the server serve would start, not yet serving.
func listen(t *testing.T, rec Recording, maxConns int) *Server {
	t.Helper()
	t.Setenv("STAX_HOME", t.TempDir())
	s, err := Listen(rec)
	if err != nil {
		t.Fatal(err)
	}
	if maxConns > 0 {
		s.limit.max = maxConns
	}
	return s
}

func clientOf(s *Server) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", s.path)
	}}}
}

func get(t *testing.T, hc *http.Client, path string, out any) int {
	t.Helper()
	resp, err := hc.Get("http://stax" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return resp.StatusCode
}

func TestQueriesAreAnsweredLive(t *testing.T) {
	s, hc := serve(t, newFake(10), 0)
	fi, err := os.Stat(s.path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %s: mode %v, %v; want 0600", s.path, fi.Mode(), err)
	}
	var top api.Top
	if code := get(t, hc, "/v1/top?n=3&sort=self", &top); code != 200 {
		t.Fatalf("top: %d", code)
	}
	if !top.Live || top.State != api.StateLive || len(top.Rows) != 3 || top.Rows[0].Func != "func_9" {
		t.Errorf("top: %+v", top)
	}
	var fl api.Flame
	get(t, hc, "/v1/flame?depth=2&threshold_pct=0", &fl)
	if !fl.Live || fl.Root == nil || len(fl.Root.Children) == 0 {
		t.Errorf("flame: %+v", fl)
	}
	var th api.Threads
	get(t, hc, "/v1/threads?n=5", &th)
	if len(th.Rows) != 1 || th.Rows[0].Name != "main" || th.State != api.StateLive {
		t.Errorf("threads: %+v", th)
	}
	var st api.Status
	get(t, hc, "/v1/status", &st)
	if st.State != api.StateLive || st.Meta.ID != "run-1" {
		t.Errorf("status: %+v", st)
	}
	var e api.Error
	if code := get(t, hc, "/v1/top?n=abc", &e); code != 400 || !strings.Contains(e.Error, "not a number") {
		t.Errorf("bad parameter: %d %+v", code, e)
	}
	var w api.Wait
	get(t, hc, "/v1/wait?samples=1000000&timeout_ms=10", &w)
	if w.Outcome != api.WaitTimeout {
		t.Errorf("wait with a timeout: %+v", w)
	}
}

// TestIdleConnectionsMakeRoom: at the cap, a new connection replaces the oldest idle one,
// so a flood of idle clients never locks a real query out.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	s, hc := serve(t, newFake(3), 4)
	var idle []net.Conn
	for range 20 {
		c, err := net.Dial("unix", s.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	var top api.Top
	if code := get(t, hc, "/v1/top", &top); code != 200 || len(top.Rows) != 3 {
		t.Fatalf("top during a flood of idle connections: %d %+v", code, top)
	}
	// The server closed the oldest idle connections: reading them ends.
	idle[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the oldest idle connection is still open: %v", err)
	}
	if n := s.limit.open(); n > 4 {
		t.Errorf("%d connections open, cap 4", n)
	}
}

// TestBusyServerRefusesAtOnce: when every connection is answering, a new one gets a 503
// and is closed, rather than waiting or costing a descriptor.
func TestBusyServerRefusesAtOnce(t *testing.T) {
	rec := newFake(3)
	s, hc := serve(t, rec, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var w api.Wait
			get(t, hc, "/v1/wait?samples=100000000", &w) // blocks until Stop
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for busy(s.limit) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the two waits never became active")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c, err := net.Dial("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "503") {
		t.Errorf("a connection past the cap got %q, %v; want 503", line, err)
	}
	rec.Stop()
	wg.Wait()
}

func busy(l *connLimiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.conns {
		if s.busy {
			n++
		}
	}
	return n
}

// TestClientThatDoesNotReadIsDropped: an answer a client does not take is dropped after
// the write timeout, and what waits for slow readers stays bounded. More clients than
// answers are built at once are dropped too.
func TestClientThatDoesNotReadIsDropped(t *testing.T) {
	old := writeTimeout.Swap(int64(200 * time.Millisecond))
	defer writeTimeout.Store(old)
	s := listen(t, newFake(framesFor(t, 4*sendBuffer(t))), 0)
	var closed atomic.Int64
	track := s.srv.ConnState
	s.srv.ConnState = func(c net.Conn, st http.ConnState) {
		track(c, st)
		if st == http.StateClosed {
			closed.Add(1)
		}
	}
	go s.Serve()
	t.Cleanup(s.Close)
	const clients = 2*maxSnapshots + 1
	for range clients {
		c, err := net.Dial("unix", s.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v1/run HTTP/1.1\r\nHost: stax\r\n\r\n")
	}
	// Each answer is encoded (a machine-dependent time, long under the race detector on a
	// busy machine), then dropped 200 ms later: the wait fails only when nothing changes for
	// far longer than one such step.
	const stuck = 60 * time.Second
	lastClosed, lastUnsent, changed := int64(-1), int64(-1), time.Now()
	for {
		n, held := closed.Load(), unsent.Load()
		if n == clients && held == 0 && s.limit.open() == 0 {
			break
		}
		if n != lastClosed || held != lastUnsent {
			lastClosed, lastUnsent, changed = n, held, time.Now()
		}
		if time.Since(changed) > stuck {
			t.Fatalf("non-reading clients still held, unchanged for %v: %d of %d connections closed, %d open, %d unsent bytes", stuck, n, clients, s.limit.open(), held)
		}
		time.Sleep(10 * time.Millisecond) // polling the server's counts
	}
	var top api.Top
	if code := get(t, clientOf(s), "/v1/top", &top); code != 200 {
		t.Errorf("top after the slow readers: %d", code)
	}
}

// TestClientsThatDoNotReadHoldNoTurns: clients that ask for answers larger than a socket
// holds and never read them do not hold the turns at building answers, so a normal query
// is answered long before they are dropped.
func TestClientsThatDoNotReadHoldNoTurns(t *testing.T) {
	old := writeTimeout.Swap(int64(time.Hour))
	defer writeTimeout.Store(old)
	s, hc := serve(t, newFake(framesFor(t, 4*sendBuffer(t))), 0)
	for range 2 * maxSnapshots {
		c, err := net.Dial("unix", s.path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v1/run HTTP/1.1\r\nHost: stax\r\n\r\n")
	}
	// Every deaf client's answer is encoded and blocked on its socket before the query.
	deadline := time.Now().Add(60 * time.Second)
	for busy(s.limit) < 2*maxSnapshots || len(s.snapshots) > 0 || s.waiting.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the deaf clients' answers were not all encoded within 60 s: %d busy, %d turns held, %d waiting", busy(s.limit), len(s.snapshots), s.waiting.Load())
		}
		time.Sleep(5 * time.Millisecond) // polling the server's counts
	}
	var top api.Top
	if code := get(t, hc, "/v1/top", &top); code != 200 || len(top.Rows) == 0 {
		t.Errorf("top behind clients that do not read: %d, %+v", code, top)
	}
}

// blockingRecording builds its snapshots only when told to.
type blockingRecording struct {
	*fakeRecording
	entered chan struct{}
	release chan struct{}
}

func (b *blockingRecording) Snapshot() *store.Run {
	b.entered <- struct{}{}
	<-b.release
	return b.fakeRecording.Snapshot()
}

// TestQueriesWaitingForATurnAreBounded: past maxWaiting queries waiting for a turn at
// building answers, a new query is told 503 at once instead of queueing.
func TestQueriesWaitingForATurnAreBounded(t *testing.T) {
	rec := &blockingRecording{fakeRecording: newFake(3), entered: make(chan struct{}), release: make(chan struct{})}
	s, hc := serve(t, rec, 0)
	var wg sync.WaitGroup
	codes := make(chan int, maxSnapshots+maxWaiting)
	for range maxSnapshots + maxWaiting {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := hc.Get("http://stax/v1/run")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	for range maxSnapshots {
		<-rec.entered
	}
	deadline := time.Now().Add(60 * time.Second)
	for s.waiting.Load() < maxWaiting {
		if time.Now().After(deadline) {
			t.Fatalf("%d queries waiting after 60 s, want %d", s.waiting.Load(), maxWaiting)
		}
		time.Sleep(5 * time.Millisecond) // polling the server's counts
	}
	resp, err := hc.Get("http://stax/v1/top")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "try again") {
		t.Errorf("a query past %d waiting: %d %s, want 503 saying to try again", maxWaiting, resp.StatusCode, body)
	}
	go func() {
		for range rec.entered {
		}
	}()
	close(rec.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("a query that waited its turn: %d, want 200", c)
		}
	}
	close(rec.entered)
}

// sendBuffer is the send buffer a unix socket gets (net.core.wmem_default): what a client
// that does not read can leave unsent before the server's writes block.
func sendBuffer(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/net/core/wmem_default")
	if err != nil {
		return 1 << 20
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		t.Fatalf("read net.core.wmem_default: %q, %v", b, err)
	}
	return n
}

// framesFor is how many frames newFake needs for a /v1/run answer of at least size bytes.
func framesFor(t *testing.T, size int) int {
	const probe = 1000
	b, err := json.Marshal(newFake(probe).Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	return size/(len(b)/probe) + 1
}

// FuzzQuery sends arbitrary query strings to every endpoint: each answer is 200, 400, 404
// (the query selects nothing) or 422 (the run lacks what it needs) with a JSON body, never
// a panic.
func FuzzQuery(f *testing.F) {
	for _, q := range []string{"n=5", "n=-1&sort=total", "depth=abc", "threshold_pct=1e309", "tid=99999999999999999999", "samples=1&seconds=NaN&timeout_ms=1", "%zz", "n=5&n=6",
		"off_cpu=1", "off_cpu=1&inverted=1&sort=total&by=process"} {
		f.Add(q)
	}
	rec := newFake(5)
	s := &Server{rec: rec, snapshots: make(chan struct{}, maxSnapshots)}
	mux := s.routes()
	f.Fuzz(func(t *testing.T, q string) {
		for _, name := range []string{"top", "flame", "callers", "threads", "timeline", "status"} {
			req := httptest.NewRequest("GET", "http://stax/v1/"+name, nil)
			req.URL.RawQuery = q
			if _, err := url.ParseQuery(q); err != nil {
				req.URL.RawQuery = url.QueryEscape(q)
			}
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, req)
			if w.Code != 200 && w.Code != 400 && w.Code != 404 && w.Code != 422 {
				t.Errorf("%s?%s: status %d", name, q, w.Code)
			}
			if !json.Valid(w.Body.Bytes()) {
				t.Errorf("%s?%s: body is not JSON: %q", name, q, w.Body.String())
			}
		}
	})
}

// TestDoesNotDependOnRecorder: the server asks a recording through the Recording interface
// and the api types only.
func TestDoesNotDependOnRecorder(t *testing.T) {
	for _, p := range testutil.StaxDeps(t, "./internal/server") {
		if p == "internal/recorder" {
			t.Errorf("internal/server depends on %s", p)
		}
	}
}

// TestStreamedRunToAClientThatDoesNotRead: a saved-run answer is streamed, so a client
// that stops reading it is dropped after the write timeout, as with any other answer.
func TestStreamedRunToAClientThatDoesNotRead(t *testing.T) {
	old := writeTimeout.Swap(int64(200 * time.Millisecond))
	defer writeTimeout.Store(old)
	rec := newFake(10)
	// 8 MB of samples that do not compress: more than the socket buffers hold.
	rng := rand.New(rand.NewPCG(5, 6))
	for range 128 {
		data := make([]byte, 0, 65535)
		for len(data) < 65535 {
			data = append(data, byte(rng.IntN(128)), 0, byte(rng.IntN(128)))
		}
		rec.run.Profile.Series.Chunks = append(rec.run.Profile.Series.Chunks, agg.SeriesChunk{N: 65535 / 3, Data: data})
	}
	rec.run.Profile.KeyEntry = []int32{0}
	s, _ := serve(t, rec, 0)
	c, err := net.Dial("unix", s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: stax\r\n\r\n", api.RunFilePath)
	deadline := time.Now().Add(20 * time.Second)
	for busy(s.limit) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the request was never taken up")
		}
		time.Sleep(time.Millisecond)
	}
	for s.limit.open() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a client that does not read its streamed run is still held after 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSocketPathOnlyWhileListening: a client that finds a run's socket is never refused,
// from the moment it appears to the moment it goes: a refusal is how a dead recorder's
// socket is told apart (clients remove it), and a live run must never look dead.
func TestSocketPathOnlyWhileListening(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	dir, err := api.SocketDir()
	if err != nil {
		t.Fatal(err)
	}
	rec := newFake(1)
	path := api.SocketPath(dir, rec.ID())
	stop := make(chan struct{})
	var refused, dials int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c, err := net.Dial("unix", path)
			if err == nil {
				c.Close()
			} else if errors.Is(err, syscall.ECONNREFUSED) {
				refused++
			}
			dials++
		}
	}()
	for range 500 {
		s, err := Listen(rec)
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve()
		s.Close()
	}
	close(stop)
	<-done
	if refused > 0 {
		t.Errorf("%d of %d connects to the socket path were refused: a live run looked dead", refused, dials)
	}
}

// TestCallersAndTransformsAnsweredLive: the socket answers callers, callees and the
// inverted flame, and every view takes the stack transforms as query parameters.
func TestCallersAndTransformsAnsweredLive(t *testing.T) {
	fr := func(n string) agg.Frame { return agg.Frame{Func: n, Image: "/bin/app", Kind: agg.KindUser} }
	rec := newFake(0)
	rec.run.Profile = agg.Profile{
		Frames:  []agg.Frame{fr("main"), fr("path_a"), fr("path_b"), fr("hot_leaf")},
		Stacks:  [][]uint32{{3, 1, 0}, {3, 2, 0}},
		Entries: []agg.Entry{{Tid: 1, Pid: 1, Stack: 1, Count: 30, LeafFunc: 3}, {Tid: 1, Pid: 1, Stack: 0, Count: 10, LeafFunc: 3}},
		Threads: []agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}},
	}
	rec.run.Profile.LocateFrameStacks()
	_, hc := serve(t, rec, 0)

	var c api.Callers
	if code := get(t, hc, "/v1/callers?fn=HOT_LEAF", &c); code != 200 {
		t.Fatalf("callers: %d", code)
	}
	if !c.Live || c.Direction != api.DirCallers || len(c.Functions) != 1 || len(c.Functions[0].Rows) != 2 ||
		c.Functions[0].Rows[0].Func != "path_b" || c.Functions[0].Rows[0].Pct != 75 {
		t.Errorf("callers: %+v", c)
	}
	get(t, hc, "/v1/callees?fn=^main$&hide=path_", &c)
	if c.Direction != api.DirCallees || c.Transform == nil || c.Transform.Hide != "path_" ||
		len(c.Functions) != 1 || len(c.Functions[0].Rows) != 1 || c.Functions[0].Rows[0].Func != "hot_leaf" {
		t.Errorf("callees with hide: %+v", c)
	}
	var fl api.Flame
	get(t, hc, "/v1/flame?inverted=1&threshold_pct=0&focus=path_a", &fl)
	if !fl.Inverted || fl.Samples != 10 || len(fl.Root.Children) != 1 || fl.Root.Children[0].Func != "hot_leaf" ||
		fl.Root.Children[0].Children[0].Func != "path_a" {
		t.Errorf("inverted flame of path_a: %+v", fl)
	}
	var top api.Top
	get(t, hc, "/v1/top?ignore=path_b", &top)
	if top.Samples != 10 {
		t.Errorf("top ignoring path_b: %d samples, want 10", top.Samples)
	}
	var th api.Threads
	get(t, hc, "/v1/threads?focus=path_b", &th)
	if th.Samples != 30 {
		t.Errorf("threads of path_b: %d samples, want 30", th.Samples)
	}
	var e api.Error
	if code := get(t, hc, "/v1/top?focus=a(", &e); code != 400 || !strings.Contains(e.Error, "not a regular expression") {
		t.Errorf("a bad regular expression: %d %+v", code, e)
	}
	if code := get(t, hc, "/v1/callers", &e); code != 400 || !strings.Contains(e.Error, "parameter fn") {
		t.Errorf("callers without fn: %d %+v", code, e)
	}
}

// TestFlameCountsMatches: match=RE counts the samples with a matching frame in the tree
// as asked (filtered and transformed), however deep the match and however pruned the tree.
func TestFlameCountsMatches(t *testing.T) {
	fr := func(n string) agg.Frame { return agg.Frame{Func: n, Image: "/bin/app", Kind: agg.KindUser} }
	rec := newFake(0)
	rec.run.Profile = agg.Profile{
		Frames: []agg.Frame{fr("main"), fr("path_a"), fr("path_b"), fr("hot_leaf"), fr("rare")},
		Stacks: [][]uint32{{3, 1, 0}, {3, 2, 0}, {4, 3, 2, 0}},
		Entries: []agg.Entry{{Tid: 1, Pid: 1, Stack: 1, Count: 30, LeafFunc: 3}, {Tid: 1, Pid: 1, Stack: 0, Count: 10, LeafFunc: 3},
			{Tid: 2, Pid: 1, Stack: 2, Count: 1, LeafFunc: 4}},
		Threads: []agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}, {Tid: 2, Pid: 1, Name: "other"}},
	}
	rec.run.Profile.LocateFrameStacks()
	_, hc := serve(t, rec, 0)
	for _, c := range []struct {
		query string
		want  uint64
	}{
		{"match=path_b", 31},
		{"match=^hot_leaf$", 41},
		{"match=rare&threshold_pct=50", 1}, // pruned from the tree, still counted
		{"match=rare&tid=1", 0},
		{"match=path_&focus=path_a", 10},
		{"match=path_b&hide=path_b", 0},
		{"match=main&inverted=1&depth=1", 41},
	} {
		var fl api.Flame
		if code := get(t, hc, "/v1/flame?"+c.query, &fl); code != 200 {
			t.Errorf("%s: %d", c.query, code)
			continue
		}
		if fl.Matched == nil || *fl.Matched != c.want {
			t.Errorf("%s: matched %v, want %d", c.query, fl.Matched, c.want)
		}
	}
	var fl map[string]any
	get(t, hc, "/v1/flame", &fl)
	if _, ok := fl["matched"]; ok {
		t.Errorf("a flame without match says matched: %v", fl["matched"])
	}
	var e api.Error
	if code := get(t, hc, "/v1/flame?match=a(", &e); code != 400 || !strings.Contains(e.Error, "not a regular expression") {
		t.Errorf("a bad match: %d %+v", code, e)
	}
}

// TestGranularityAnsweredLive: the socket answers top, flame and callers by line, address
// or image, with or without inlined functions, and refuses a granularity it does not know.
func TestGranularityAnsweredLive(t *testing.T) {
	fr := func(n string, inlined bool) agg.Frame {
		return agg.Frame{Func: n, Image: "app", Kind: agg.KindUser, File: "/src/app.c", Inlined: inlined}
	}
	rec := newFake(0)
	rec.run.Profile = agg.Profile{
		Frames: []agg.Frame{fr("main", false), fr("work", false), fr("helper", true)},
		Locations: []agg.Location{
			{Addr: 0x1010, Lines: []agg.Line{{Func: 2, Line: 3}, {Func: 1, Line: 9}}},
			{Addr: 0x1103, Lines: []agg.Line{{Func: 0, Line: 20}}},
			{Addr: 0x1107, Lines: []agg.Line{{Func: 0, Line: 21}}},
		},
		Stacks:  [][]uint32{{0, 1}, {0, 2}},
		Entries: []agg.Entry{{Tid: 1, Pid: 1, Stack: 0, Count: 10, LeafFunc: 1}, {Tid: 1, Pid: 1, Stack: 1, Count: 30, LeafFunc: 1}},
		Threads: []agg.ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}},
	}
	rec.run.Profile.ExpandStacks()
	_, hc := serve(t, rec, 0)

	var top api.Top
	if code := get(t, hc, "/v1/top?by=line&inline=0", &top); code != 200 {
		t.Fatalf("top: %d", code)
	}
	if top.By != agg.ByLine || !top.NoInline || len(top.Rows) != 3 || top.Rows[0].Func != "work" || top.Rows[0].Line != 9 || top.Rows[0].Self != 40 {
		t.Errorf("top by line without inlined functions: %+v", top)
	}
	if code := get(t, hc, "/v1/top?by=address", &top); code != 200 || top.Rows[0].Func != "helper" || top.Rows[0].Addr != 0x1010 {
		t.Errorf("top by address: %d %+v", code, top.Rows)
	}
	var fl api.Flame
	if code := get(t, hc, "/v1/flame?by=line&threshold_pct=0", &fl); code != 200 || fl.By != agg.ByLine || len(fl.Root.Children) != 2 ||
		fl.Root.Children[0].Place == nil || fl.Root.Children[0].Line != 21 {
		t.Errorf("flame by line: %d %+v", code, fl.Root)
	}
	var c api.Callers
	if code := get(t, hc, "/v1/callers?fn=work&by=line", &c); code != 200 || len(c.Functions) != 1 || len(c.Functions[0].Rows) != 2 ||
		c.Functions[0].Rows[0].Line != 21 || c.Functions[0].Rows[0].Total != 30 {
		t.Errorf("callers of work by line: %d %+v", code, c.Functions)
	}
	var e api.Error
	if code := get(t, hc, "/v1/top?by=file", &e); code != 400 || !strings.Contains(e.Error, "--by must be") {
		t.Errorf("top by file: %d %q", code, e.Error)
	}
}

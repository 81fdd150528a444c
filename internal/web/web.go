// Package web serves a run to a browser: a page (embedded in the binary) with a timeline,
// a stack chart, a flame graph, a sandwich, a call tree, a top table and annotated code,
// kept current while the run records.
//
// The page draws with its own small DOM and SVG code rather than a charting library: it
// needs no build step or network, every frame is an element a test can measure, and live
// updates can keep the user's zoom and selection because the page owns its state.
//
// Every request must carry the token printed in the URL (other local users can reach a
// loopback port) and a Host header naming this machine (DNS rebinding). Every endpoint
// only reads the one run it serves.
package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/client"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
)

//go:embed assets
var assets embed.FS

// Source answers the run socket's queries (server.Handler's paths, /v1/...).
type Source interface {
	Get(ctx context.Context, path string, q url.Values) (body []byte, code int)
}

// HandlerSource answers in-process: a stored run (server.Stored) or the recorder's own.
type HandlerSource struct {
	http.Handler
	// Stored says the answers never change (a stored run): the page's server keeps the
	// recent ones, so going back to a view costs nothing.
	Stored bool
}

// fixed is a Source whose answers never change.
type fixed interface{ fixed() bool }

func (h HandlerSource) fixed() bool { return h.Stored }

// Get runs the request through the handler.
func (h HandlerSource) Get(ctx context.Context, path string, q url.Values) ([]byte, int) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path+"?"+q.Encode(), nil)
	if err != nil {
		return errorBody(err.Error()), http.StatusBadRequest
	}
	w := &bufferWriter{header: http.Header{}, code: http.StatusOK}
	h.ServeHTTP(w, req)
	return w.buf.Bytes(), w.code
}

type bufferWriter struct {
	header http.Header
	buf    bytes.Buffer
	code   int
}

func (w *bufferWriter) Header() http.Header         { return w.header }
func (w *bufferWriter) Write(b []byte) (int, error) { return w.buf.Write(b) }
func (w *bufferWriter) WriteHeader(code int)        { w.code = code }

// LiveSource asks a recorder over its socket, and once the recording has finished,
// answers from the stored run.
type LiveSource struct {
	run    *client.Run
	mu     sync.Mutex
	stored Source // set once the run is no longer live
}

// NewLiveSource asks run while it is live.
func NewLiveSource(run *client.Run) *LiveSource { return &LiveSource{run: run} }

// Get asks the recorder, or the stored run once the recorder has finished.
func (l *LiveSource) Get(ctx context.Context, path string, q url.Values) ([]byte, int) {
	l.mu.Lock()
	stored := l.stored
	l.mu.Unlock()
	if stored != nil {
		return stored.Get(ctx, path, q)
	}
	var raw json.RawMessage
	err := l.run.Get(ctx, path, q, &raw)
	if err == nil {
		return raw, http.StatusOK
	}
	if re := (*client.RequestError)(nil); errors.As(err, &re) {
		return errorBody(re.Msg), http.StatusBadRequest
	}
	if ae := (*client.AnswerError)(nil); errors.As(err, &ae) {
		// The recorder answered with an error of its own (no such function, too busy).
		return errorBody(ae.Msg), ae.Code
	}
	if !errors.Is(err, client.ErrGone) {
		return errorBody(err.Error()), http.StatusServiceUnavailable
	}
	// The recording has finished: its stored copy answers from now on (each answer says
	// the run's state, which the page shows).
	run, lerr := l.run.LoadStored()
	if lerr != nil {
		return errorBody(fmt.Sprintf("%v; the stored copy: %v", err, lerr)), http.StatusServiceUnavailable
	}
	l.mu.Lock()
	l.stored = HandlerSource{Handler: server.Handler(server.Stored(run), false), Stored: true}
	l.mu.Unlock()
	return l.Get(ctx, path, q)
}

func errorBody(msg string) []byte {
	b, _ := json.Marshal(api.Error{Error: msg})
	return b
}

// Options configure a web server.
type Options struct {
	Addr string // host:port to listen on; empty: 127.0.0.1 on a free port
	// View is added to the printed URL: the page opens on it (from, to, tid, the
	// transforms, inverted; see the page's URL parameters in docs/web.md).
	View url.Values
	// Base, when set, is what the page's diff compares the run with.
	Base *Base
	// Recording says the source is a recording that Switch replaces with the stored run
	// (stax record --web): between the end of the recording and the switch the page is
	// told the run is being saved, not yet stored, so that it waits for the final answers.
	Recording bool
}

// Base is the other side of a diff: another run, or another window of the run served.
type Base struct {
	Run    *store.Run   // held whole; for a window of a live run, its snapshot when the page was started
	Window query.Window // the part of Run compared
	// Same says Run is the run served: the page's thread and process filters apply to it
	// too (for another run they would name other threads).
	Same bool
}

// Server serves one run.
type Server struct {
	srcMu    sync.Mutex
	src      Source // see source; Switch changes it
	token    string
	ln       net.Listener
	srv      *http.Server
	url      string
	loopback bool
	hostname string
	port     string
	closeMu  sync.Mutex
	atClose  []func()
	// Polled by the page's event stream; answers are cached for a moment so many open
	// pages cost one query.
	statusMu  sync.Mutex
	statusAt  time.Time
	statusVal []byte

	cache  *answers      // nil: the source's answers change (guarded by srcMu)
	saving bool          // Options.Recording until Switch (guarded by srcMu)
	warmed chan struct{} // closed once warm has asked what it asks (nil: it asks nothing)

	diff    *Diff
	baseRun *store.Run // the base, cut to its window
	// The base whole, and its window: time off CPU is cut to a window by its intervals,
	// which the cut run does not hold.
	baseWhole *store.Run
	baseWin   query.Window
	baseTid   bool // thread and process filters apply to the base
	// Base trees by query: the base does not change, so each is built once.
	baseMu    sync.Mutex
	baseTrees map[string]baseTree
	baseOrder []string
}

type baseTree struct {
	root    *api.FlameNode
	samples uint64
}

// Listen opens the server's port; Serve answers on it.
func Listen(src Source, o Options) (*Server, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %v (write it as HOST:PORT, like 127.0.0.1:8080)", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{src: src, token: hex.EncodeToString(tok), ln: ln, loopback: isLoopback(host), baseTrees: map[string]baseTree{}}
	if b := o.Base; b != nil {
		run, win, err := b.Window.Apply(b.Run)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("the base of the diff, run %s: %w", b.Run.Meta.ID, err)
		}
		s.baseRun, s.baseTid = run, b.Same
		s.baseWhole, s.baseWin = b.Run, b.Window
		s.diff = &Diff{Base: b.Run.Meta.ID, Same: b.Same, Window: win, Samples: run.Profile.TotalSamples()}
	}
	s.Switch(src)
	s.saving = o.Recording
	s.hostname, _ = os.Hostname()
	_, s.port, _ = net.SplitHostPort(ln.Addr().String())
	shown := host
	if host == "" || host == "0.0.0.0" || host == "::" {
		shown = "127.0.0.1"
	}
	s.url = "http://" + net.JoinHostPort(shown, s.port) + "/?token=" + s.token
	if len(o.View) > 0 {
		s.url += "&" + o.View.Encode()
	} else if _, cache := s.source(); cache != nil {
		s.warmed = make(chan struct{})
		go s.warm()
	}
	s.srv = &http.Server{Handler: s.guard(s.routes()), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10}
	return s, nil
}

// Switch has the server answer from src from now on: stax record --web serves the
// stored run once the recording has ended and been saved. The page's event stream then
// tells it that the run is stored, and it loads the final answers.
func (s *Server) Switch(src Source) {
	s.srcMu.Lock()
	s.src, s.cache, s.saving = src, nil, false
	if f, ok := src.(fixed); ok && f.fixed() {
		s.cache = &answers{m: map[string][]byte{}}
	}
	s.srcMu.Unlock()
	s.statusMu.Lock()
	s.statusVal = nil
	s.statusMu.Unlock()
}

// source is the source answering now, and its cache (nil: its answers change).
func (s *Server) source() (Source, *answers) {
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	return s.src, s.cache
}

// URL is the page's address, token included.
func (s *Server) URL() string { return s.url }

// Loopback says whether the server listens on a loopback address only.
func (s *Server) Loopback() bool { return s.loopback }

// Serve answers until Close.
func (s *Server) Serve() error {
	err := s.srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// AtClose has Close call f first (to remove a file that gives the page's URL away).
func (s *Server) AtClose(f func()) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	s.atClose = append(s.atClose, f)
}

// Close stops the server; open event streams end.
func (s *Server) Close() {
	s.closeMu.Lock()
	fs := s.atClose
	s.atClose = nil
	s.closeMu.Unlock()
	for _, f := range fs {
		f()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guard refuses requests without the token, or with a Host that is not this machine.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		if !s.hostAllowed(r.Host) {
			http.Error(w, "forbidden: this server answers only to its own address", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodGet && (r.URL.Path == "/favicon.ico" || r.URL.Path == "/favicon.svg") {
			// The icon tells nothing about the run: browsers ask for it without the token.
			serveGzipped(s.asset("assets/favicon.svg", "image/svg+xml"), w, r)
			return
		}
		tok := r.URL.Query().Get("token")
		if tok == "" {
			tok = r.Header.Get("X-Stax-Token")
		}
		if subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
			http.Error(w, "forbidden: open the URL stax web printed (it carries the token)", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		serveGzipped(next, w, r)
	})
}

// hostAllowed accepts a Host naming this server as an IP address, localhost or the
// machine's name: a name that resolves here by DNS rebinding is none of these.
func (s *Server) hostAllowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, "80"
	}
	if port != s.port {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		return !s.loopback || ip.IsLoopback()
	}
	return !s.loopback && s.hostname != "" && host == strings.ToLower(s.hostname)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /app.js", s.asset("assets/app.js", "text/javascript; charset=utf-8"))
	mux.HandleFunc("GET /app.css", s.asset("assets/app.css", "text/css; charset=utf-8"))
	// The views beside app.js, each in a file of its own (loaded before it).
	for _, name := range []string{"subtree.js", "colours.js", "stackchart.js", "sandwich.js", "calltree.js", "samples.js"} {
		mux.HandleFunc("GET /"+name, s.asset("assets/"+name, "text/javascript; charset=utf-8"))
	}
	mux.HandleFunc("GET /views.css", s.asset("assets/views.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /api/status", s.status)
	mux.HandleFunc("GET /api/events", s.events)
	mux.HandleFunc("GET /api/timeline", s.proxy(func() api.Request { return &api.TimelineRequest{} }, timelineDefaults))
	mux.HandleFunc("GET /api/flame", s.flame)
	mux.HandleFunc("GET /api/changes", s.changes)
	mux.HandleFunc("GET /api/top", s.proxy(func() api.Request { return &api.TopRequest{} }, map[string]string{"n": "100"}))
	mux.HandleFunc("GET /api/threads", s.proxy(func() api.Request { return &api.ThreadsRequest{} }, map[string]string{"n": "200"}))
	mux.HandleFunc("GET /api/thread_states", s.proxy(func() api.Request { return &api.TimelineRequest{States: true} }, map[string]string{"threads": "16", "buckets": "200"}))
	mux.HandleFunc("GET /api/wakers", s.proxy(func() api.Request { return &api.WakersRequest{} }, map[string]string{"stacks": "3"}))
	mux.HandleFunc("GET /api/callers", s.proxy(func() api.Request { return &api.CallersRequest{} }, map[string]string{"n": "12", "functions": "4"}))
	mux.HandleFunc("GET /api/callees", s.proxy(func() api.Request { return &api.CallersRequest{Callees: true} }, map[string]string{"n": "12", "functions": "4"}))
	mux.HandleFunc("GET /api/annotate", s.annotate)
	mux.HandleFunc("GET /api/stack_chart", s.proxy(func() api.Request { return &api.StackChartRequest{} }, nil))
	mux.HandleFunc("GET /api/samples", s.samples)
	return mux
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	b = bytes.ReplaceAll(b, []byte("{{TOKEN}}"), []byte(s.token))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b)
}

func (s *Server) asset(name, ctype string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, err := assets.ReadFile(name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ctype)
		w.Write(b)
	}
}

// pageRequest sets req from the page's query parameters (those of the socket API's
// request: anything else is not passed on), with the page's defaults where it gives none.
func pageRequest(r *http.Request, req api.Request, defaults map[string]string) error {
	q := r.URL.Query()
	for k, d := range defaults {
		if q.Get(k) == "" {
			q.Set(k, d)
		}
	}
	return req.Decode(q)
}

// What the page's flame graph and timeline ask where it says nothing.
var (
	flameDefaults    = map[string]string{"depth": "0", "threshold_pct": "0.1"}
	timelineDefaults = map[string]string{"threads": "16", "buckets": "200"}
)

// flame answers the flame graph; with diff=1, and a base, each node also has the share
// of samples the same call path has in the base (api.DiffFlame, as stax flame --diff).
func (s *Server) flame(w http.ResponseWriter, r *http.Request) {
	var req api.FlameRequest
	if err := pageRequest(r, &req, flameDefaults); err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return
	}
	body, code := s.get(r.Context(), req.Path(), req.Encode())
	if code != http.StatusOK || s.diff == nil || r.URL.Query().Get("diff") != "1" {
		writeRaw(w, code, body)
		return
	}
	var fl api.Flame
	if err := json.Unmarshal(body, &fl); err != nil {
		writeJSON(w, http.StatusBadGateway, api.Error{Error: fmt.Sprintf("flame graph unreadable: %v", err)})
		return
	}
	base, err := s.baseFlame(req, fl.Inverted, 0)
	if err != nil {
		// The graph is still the run's (a base without off-CPU time has no tree of it):
		// the page shows it with why it is not coloured by change.
		writeJSON(w, http.StatusOK, struct {
			api.Flame
			DiffError string `json:"diff_error"`
		}{fl, err.Error()})
		return
	}
	if fl.Root != nil {
		api.DiffFlame(fl.Root, base.root, req.ThresholdPct)
	}
	writeJSON(w, http.StatusOK, struct {
		api.Flame
		Diff        *Diff  `json:"diff"`
		BaseSamples uint64 `json:"base_samples"`
	}{fl, s.diff, base.samples})
}

// samplesShown is how many of a tracepoint's samples the page lists unless it asks for
// another number: the newest of those its view selects.
const samplesShown = "200"

// pageSample is a tracepoint's sample as the page lists it: T is its time in seconds
// from the run's start (JavaScript's numbers do not hold every time_ns), and its fields'
// integers beyond 2^53 are strings of their digits (exactNumbers).
type pageSample struct {
	api.TraceSample
	T float64 `json:"t"`
}

// samples answers a tracepoint's samples with their fields (/v1/samples), for the page's
// samples panel.
func (s *Server) samples(w http.ResponseWriter, r *http.Request) {
	var req api.SamplesRequest
	if err := pageRequest(r, &req, map[string]string{"n": samplesShown}); err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return
	}
	body, code := s.get(r.Context(), req.Path(), req.Encode())
	if code != http.StatusOK {
		writeRaw(w, code, body)
		return
	}
	var res api.Samples
	if err := json.Unmarshal(body, &res); err != nil {
		writeJSON(w, http.StatusBadGateway, api.Error{Error: fmt.Sprintf("samples unreadable: %v", err)})
		return
	}
	out := make([]pageSample, len(res.Samples))
	for i, ts := range res.Samples {
		for j := range ts.Fields {
			ts.Fields[j].Value = exactNumbers(ts.Fields[j].Value)
		}
		out[i] = pageSample{TraceSample: ts}
		if ts.TimeNs >= res.StartNs {
			out[i].T = float64(ts.TimeNs-res.StartNs) / 1e9
		}
	}
	res.Samples = nil
	writeJSON(w, http.StatusOK, struct {
		api.Samples
		Rows []pageSample `json:"samples"` // over the embedded answer's
	}{res, out})
}

// exactNumbers is a field's value (JSON: a number, a string, a list of numbers) with
// each integer that a JavaScript number would not hold exactly (beyond 2^53) written as a
// string of its digits: a pointer's value stays exact on the page.
func exactNumbers(v json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if dec.Decode(&x) != nil {
		return v
	}
	changed := false
	big := func(n json.Number) bool {
		const most = 1 << 53
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i > most || i < -most
		}
		_, err := strconv.ParseUint(string(n), 10, 64)
		return err == nil
	}
	fix := func(x any) any {
		if n, ok := x.(json.Number); ok && big(n) {
			changed = true
			return string(n)
		}
		return x
	}
	x = fix(x)
	if l, ok := x.([]any); ok {
		for i := range l {
			l[i] = fix(l[i])
		}
	}
	if !changed {
		return v
	}
	b, err := json.Marshal(x)
	if err != nil {
		return v
	}
	return b
}

// Change is a row of the diff's table: a function's share of the samples in which it
// was running (its self share), in the base and in the run.
type Change struct {
	Func     string  `json:"func"`
	Image    string  `json:"image"`
	Kind     string  `json:"kind"`
	Inlined  bool    `json:"inlined,omitempty"`
	Pct      float64 `json:"pct"`
	BasePct  float64 `json:"base_pct"`
	DeltaPct float64 `json:"delta_pct"` // pct - base_pct, percentage points
}

// changes answers the functions whose self share changed most from the base (what grew
// first among equal changes): the first level of the inverted trees of both, diffed as
// the flame graph is.
func (s *Server) changes(w http.ResponseWriter, r *http.Request) {
	if s.diff == nil {
		writeJSON(w, http.StatusNotFound, api.Error{Error: "no diff: start stax web with --diff BASE or --base-from/--base-to"})
		return
	}
	var req api.FlameRequest
	if err := pageRequest(r, &req, nil); err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return
	}
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n <= 0 {
		n = 20
	}
	req.Inverted, req.Depth, req.ThresholdPct = true, 1, 0
	body, code := s.get(r.Context(), req.Path(), req.Encode())
	if code != http.StatusOK {
		writeRaw(w, code, body)
		return
	}
	var fl api.Flame
	if err := json.Unmarshal(body, &fl); err != nil {
		writeJSON(w, http.StatusBadGateway, api.Error{Error: fmt.Sprintf("flame graph unreadable: %v", err)})
		return
	}
	base, err := s.baseFlame(req, true, 1)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return
	}
	rows := []Change{}
	if fl.Root != nil {
		api.DiffFlame(fl.Root, base.root, 0)
		for _, c := range fl.Root.Children {
			ch := Change{Func: c.Func, Image: c.Image, Kind: c.Kind, Inlined: c.Inlined, Pct: c.TotalPct}
			if c.BasePct != nil {
				ch.BasePct = *c.BasePct
			}
			ch.DeltaPct = ch.Pct - ch.BasePct
			rows = append(rows, ch)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if a, b := math.Abs(rows[i].DeltaPct), math.Abs(rows[j].DeltaPct); a != b {
			return a > b
		}
		if rows[i].DeltaPct != rows[j].DeltaPct {
			return rows[i].DeltaPct > rows[j].DeltaPct // what grew first
		}
		return rows[i].Func < rows[j].Func
	})
	if len(rows) > n {
		rows = rows[:n]
	}
	writeJSON(w, http.StatusOK, struct {
		Diff        *Diff    `json:"diff"`
		Samples     uint64   `json:"samples"`
		BaseSamples uint64   `json:"base_samples"`
		Rows        []Change `json:"rows"`
	}{s.diff, fl.Samples, base.samples, rows})
}

// baseFlame is the base's tree for the page's query q, unpruned (as stax flame --diff
// builds it), cut to depth levels (0: all).
func (s *Server) baseFlame(req api.FlameRequest, inverted bool, depth int) (baseTree, error) {
	// The base is weighed as the run is: samples, or time off CPU, or both (a diff of
	// off-CPU time against the base's CPU samples would compare nothing).
	o := query.FlameOptions{Depth: depth, Inverted: inverted, Transform: req.Transform,
		OffCPU: req.OffCPU, Wall: req.Wall, Runnable: req.Runnable}
	if s.baseTid {
		o.Tid, o.Processes = req.Tid, query.Processes(req.Processes)
	} else {
		// Process names carry over to another run; thread and process ids do not.
		o.Processes.Comm = req.Processes.Comm
	}
	key := fmt.Sprintf("%+v %q %q", o, req.Event, req.Weight)
	s.baseMu.Lock()
	defer s.baseMu.Unlock()
	if t, ok := s.baseTrees[key]; ok {
		return t, nil
	}
	run := s.baseRun
	if o.OffCPU || o.Wall || o.Runnable || req.Weight != "" {
		run, o.Window = s.baseWhole, s.baseWin
	}
	// The base counts the same event as the run (a base that did not sample it says so).
	run, _, err := query.EventView(run, req.Event)
	if err != nil {
		return baseTree{}, fmt.Errorf("the base: %w", err)
	}
	if req.Weight != "" {
		// Weighed by a tracepoint's field as the run is: its samples kept with their fields,
		// cut to the base's window by their times.
		if run, _, err = query.WeightView(run, req.Event, req.Weight, o.Window); err != nil {
			return baseTree{}, fmt.Errorf("the base: %w", err)
		}
		o.Window = query.Window{}
	}
	res, err := query.Flame(run, o)
	if err != nil {
		return baseTree{}, fmt.Errorf("the base: %w", err)
	}
	t := baseTree{res.Root, res.Samples}
	if len(s.baseOrder) >= 8 {
		delete(s.baseTrees, s.baseOrder[0])
		s.baseOrder = s.baseOrder[1:]
	}
	s.baseTrees[key] = t
	s.baseOrder = append(s.baseOrder, key)
	return t, nil
}

// get asks the source, or takes a recent answer of a source whose answers never change;
// of such a source, a question asked again while its first ask is answered waits for that
// answer rather than ask again (the page's first questions, asked by warm as the server
// started, are the page's too).
func (s *Server) get(ctx context.Context, path string, q url.Values) ([]byte, int) {
	src, cache := s.source()
	if cache == nil {
		return src.Get(ctx, path, q)
	}
	key := path + "?" + q.Encode()
	for {
		b, ok, wait := cache.getOrClaim(key)
		if ok {
			return b, http.StatusOK
		}
		if wait == nil {
			break // claimed: this ask answers it
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return errorBody(ctx.Err().Error()), http.StatusServiceUnavailable
		}
	}
	b, code := src.Get(ctx, path, q)
	cache.settle(key, b, code == http.StatusOK)
	return b, code
}

// warm asks, in the background, what the page's first load asks of a source whose answers
// never change, with no view in its address: the flame graph and the timeline. They are
// computed while the browser starts and loads the page (a big run's first graph took
// 200 ms of the server's CPU), and its asks take them, or wait for them (get).
func (s *Server) warm() {
	defer close(s.warmed)
	for _, first := range []struct {
		url      string
		req      api.Request
		defaults map[string]string
	}{
		{"/api/flame?threshold_pct=0.1", &api.FlameRequest{}, flameDefaults},
		{"/api/timeline?threads=16&buckets=200", &api.TimelineRequest{}, timelineDefaults},
	} {
		r, err := http.NewRequest(http.MethodGet, first.url, nil)
		if err != nil || pageRequest(r, first.req, first.defaults) != nil {
			continue
		}
		s.get(context.Background(), first.req.Path(), first.req.Encode())
	}
}

// answers keeps the most recent answers, up to a number and a size, and the questions
// being answered (pending: closed once answered).
type answers struct {
	mu      sync.Mutex
	m       map[string][]byte
	order   []string // oldest first
	bytes   int
	pending map[string]chan struct{}
}

// getOrClaim gives the answer kept for key (ok); else, where another ask is answering it,
// a channel closed once it is; else (nil) it claims key: the caller answers, then settles.
func (a *answers) getOrClaim(key string) (b []byte, ok bool, wait chan struct{}) {
	if b, ok := a.get(key); ok {
		return b, true, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w, ok := a.pending[key]; ok {
		return nil, false, w
	}
	if a.pending == nil {
		a.pending = map[string]chan struct{}{}
	}
	a.pending[key] = make(chan struct{})
	return nil, false, nil
}

// settle ends the claim on key: the answer is kept if good, and the waiting asks go on.
func (a *answers) settle(key string, b []byte, good bool) {
	if good {
		a.put(key, b)
	}
	a.mu.Lock()
	if w, ok := a.pending[key]; ok {
		close(w)
		delete(a.pending, key)
	}
	a.mu.Unlock()
}

const (
	maxAnswers     = 64
	maxAnswerBytes = 64 << 20
)

func (a *answers) get(key string) ([]byte, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.m[key]
	if ok {
		a.order = append(slices.DeleteFunc(a.order, func(k string) bool { return k == key }), key)
	}
	return b, ok
}

func (a *answers) put(key string, b []byte) {
	if len(b) > maxAnswerBytes/4 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.m[key]; ok {
		return
	}
	for len(a.order) > 0 && (len(a.order) >= maxAnswers || a.bytes+len(b) > maxAnswerBytes) {
		a.bytes -= len(a.m[a.order[0]])
		delete(a.m, a.order[0])
		a.order = a.order[1:]
	}
	a.m[key] = b
	a.order = append(a.order, key)
	a.bytes += len(b)
}

// proxy passes the page's request of newReq's kind on to the source.
func (s *Server) proxy(newReq func() api.Request, defaults map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := newReq()
		if err := pageRequest(r, req, defaults); err != nil {
			writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
			return
		}
		body, code := s.get(r.Context(), req.Path(), req.Encode())
		writeRaw(w, code, body)
	}
}

func writeRaw(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(body)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, errorBody(err.Error())
	}
	writeRaw(w, code, b)
}

// Summary is what the page's status strip shows and the event stream sends.
type Summary struct {
	Run            string   `json:"run"`
	State          string   `json:"state"`
	Live           bool     `json:"live"`
	Command        []string `json:"command"`
	Samples        uint64   `json:"samples"`
	Lost           uint64   `json:"lost"`
	ElapsedSec     float64  `json:"elapsed_sec"`
	Threads        int      `json:"threads"`
	DistinctStacks int      `json:"distinct_stacks"`
	JITSources     int      `json:"jit_sources"`   // jitdump files and perf maps found
	JITFunctions   int      `json:"jit_functions"` // functions they named
	JITSamples     uint64   `json:"jit_samples"`
	JITUnnamed     uint64   `json:"jit_unnamed"`
	UnknownSamples uint64   `json:"unknown_samples"`
	Unresolved     uint64   `json:"unresolved_frames"`
	// UnknownHint is what stax status says would name the unknown samples (api.SymbolsHint);
	// empty when it names no fix.
	UnknownHint string `json:"unknown_hint,omitempty"`
	Diff        *Diff  `json:"diff,omitempty"` // what the page's diff compares with; absent: no diff
	// Events are the events the run sampled (stax record -e), with their samples: the
	// page offers a choice where there are several. Absent: a run that lists none.
	Events []api.EventCount `json:"events,omitempty"`
	// Traces are the tracepoint events whose samples the run keeps with their fields, and
	// those fields: the page's samples panel lists them, and its "weigh by" offers the
	// numeric ones. Absent: none.
	Traces []api.TraceEvent `json:"traces,omitempty"`
}

// Diff describes the base of a diff.
type Diff struct {
	Base    string      `json:"base"`             // its run id
	Same    bool        `json:"same"`             // another window of the run served
	Window  *api.Window `json:"window,omitempty"` // the part of the base compared; absent: all of it
	Samples uint64      `json:"samples"`          // in that part
}

func (s *Server) summary(ctx context.Context) ([]byte, int) {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	if s.statusVal != nil && time.Since(s.statusAt) < 200*time.Millisecond {
		return s.statusVal, http.StatusOK
	}
	s.srcMu.Lock()
	src, saving := s.src, s.saving
	s.srcMu.Unlock()
	body, code := src.Get(ctx, "/v1/status", nil)
	if code != http.StatusOK {
		return body, code
	}
	var st api.Status
	if err := json.Unmarshal(body, &st); err != nil {
		return errorBody(err.Error()), http.StatusBadGateway
	}
	if saving && !st.Live {
		// The recording has ended and is being saved: the stored run's answers come next.
		st.Live, st.State = true, "saving"
	}
	jitFuncs := 0
	for _, j := range st.JIT {
		jitFuncs += j.Functions
	}
	b, _ := json.Marshal(Summary{Run: st.Meta.ID, State: st.State, Live: st.Live, Command: st.Meta.Command,
		Samples: st.Meta.Samples, Lost: st.Meta.Lost, ElapsedSec: st.ElapsedSec, Threads: st.Threads,
		DistinctStacks: st.DistinctStacks, JITSources: len(st.JIT), JITFunctions: jitFuncs, JITSamples: st.JITSamples, JITUnnamed: st.JITUnnamed,
		UnknownSamples: st.UnknownSamples, Unresolved: st.Meta.Unresolved, Diff: s.diff,
		UnknownHint: api.SymbolsHint(st.Unsymbolized, st.Meta.Samples), Events: st.Meta.Events, Traces: st.Traces})
	s.statusVal, s.statusAt = b, time.Now()
	return b, http.StatusOK
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	body, code := s.summary(r.Context())
	writeRaw(w, code, body)
}

// events streams the run's summary (server-sent events) whenever it changes, at most
// once a second, until the run is no longer live or the page goes.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last []byte
	quiet := 0
	for {
		body, code := s.summary(r.Context())
		switch {
		case code == http.StatusOK && !bytes.Equal(body, last):
			fmt.Fprintf(w, "event: status\ndata: %s\n\n", body)
			last, quiet = body, 0
		case quiet >= 15:
			io.WriteString(w, ": still here\n\n")
			quiet = 0
		default:
			quiet++
		}
		fl.Flush()
		var st Summary
		if json.Unmarshal(last, &st) == nil && !st.Live && st.State != "" {
			return // the run is finished: nothing more will change
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// annotate answers with the annotation and its text, as stax annotate prints it; for a
// run read with counters (stax record --counters), the text leaves out their columns and
// the answer gives them apart (counters, counter_totals, and counted: each instruction's
// with samples), for the page to draw them as columns as wide as their numbers.
func (s *Server) annotate(w http.ResponseWriter, r *http.Request) {
	var req api.AnnotateRequest
	if err := pageRequest(r, &req, nil); err != nil {
		writeJSON(w, http.StatusBadRequest, api.Error{Error: err.Error()})
		return
	}
	body, code := s.get(r.Context(), req.Path(), req.Encode())
	if code != http.StatusOK {
		writeRaw(w, code, body)
		return
	}
	var res api.Annotate
	if err := json.Unmarshal(body, &res); err != nil || res.Annotation == nil {
		writeJSON(w, http.StatusBadGateway, api.Error{Error: fmt.Sprintf("annotation unreadable: %v", err)})
		return
	}
	var counted []countedInst
	for _, in := range res.Annotation.Insts {
		if len(in.Counters) > 0 {
			counted = append(counted, countedInst{"0x" + strconv.FormatUint(in.Addr, 16), in.Counters})
		}
	}
	doc := query.AnnotationOfDoc(res.Annotation)
	doc.Counters, doc.CounterTotals = nil, nil
	for i := range doc.Insts {
		doc.Insts[i].Counters = nil
	}
	var text bytes.Buffer
	if err := doc.WriteText(&text, annotate.TextOptions{}); err != nil {
		writeJSON(w, http.StatusInternalServerError, api.Error{Error: err.Error()})
		return
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&text, "note: %s\n", n)
	}
	writeJSON(w, http.StatusOK, struct {
		Func     string              `json:"func"`
		Image    string              `json:"image"`
		Total    uint64              `json:"total"`
		Versions []api.CodeVersion   `json:"versions,omitempty"`
		Version  int                 `json:"version,omitempty"`
		Others   []api.AnnotateMatch `json:"other_matches,omitempty"`
		Text     string              `json:"text"`
		Counters []string            `json:"counters,omitempty"`
		Totals   []uint64            `json:"counter_totals,omitempty"`
		Counted  []countedInst       `json:"counted,omitempty"`
	}{res.Annotation.Func, res.Annotation.Image, res.Annotation.Total, res.Versions, res.Version, res.Others, text.String(),
		res.Annotation.Counters, res.Annotation.CounterTotals, counted})
}

// countedInst is what the counters counted in the samples of the instruction at Addr (in
// hex, as the text writes it: JavaScript's numbers do not hold every address).
type countedInst struct {
	Addr     string   `json:"addr"`
	Counters []uint64 `json:"counters"`
}

// Package pushtest has loopback endpoints for tests of stax's push: a server that checks
// requests as Pyroscope's HTTP API documents them (no Pyroscope server can be installed
// where stax is tested), and one that hangs or fails on demand.
package pushtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"

	"github.com/google/pprof/profile"
)

// Ingest is one request Pyroscope took.
type Ingest struct {
	Name        string
	From, Until int64
	SampleRate  int
	Profile     *profile.Profile
}

// Pyroscope is a loopback server for POST /ingest?name=APP{LABELS}&from=UNIX&until=UNIX
// &format=pprof[&sampleRate=HZ] with a multipart/form-data body whose "profile" field is
// a (gzip'd) pprof profile. A request that is not so is answered 400 and kept as an error.
type Pyroscope struct {
	*httptest.Server
	mu      sync.Mutex
	ingests []Ingest
	errs    []string
}

// NewPyroscope starts one on 127.0.0.1.
func NewPyroscope() *Pyroscope {
	p := &Pyroscope{}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

func (p *Pyroscope) serve(w http.ResponseWriter, r *http.Request) {
	in, err := parseIngest(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errs = append(p.errs, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.ingests = append(p.ingests, in)
}

func parseIngest(r *http.Request) (Ingest, error) {
	if r.Method != http.MethodPost || r.URL.Path != "/ingest" {
		return Ingest{}, fmt.Errorf("%s %s: want POST /ingest", r.Method, r.URL.Path)
	}
	q := r.URL.Query()
	in := Ingest{Name: q.Get("name")}
	if open := strings.IndexByte(in.Name, '{'); open <= 0 || !strings.HasSuffix(in.Name, "}") {
		return Ingest{}, fmt.Errorf("name %q: want APP{LABELS}", in.Name)
	}
	var err error
	if in.From, err = strconv.ParseInt(q.Get("from"), 10, 64); err != nil {
		return Ingest{}, fmt.Errorf("from %q: want UNIX seconds", q.Get("from"))
	}
	if in.Until, err = strconv.ParseInt(q.Get("until"), 10, 64); err != nil || in.Until < in.From {
		return Ingest{}, fmt.Errorf("until %q: want UNIX seconds, not before from", q.Get("until"))
	}
	if f := q.Get("format"); f != "pprof" {
		return Ingest{}, fmt.Errorf("format %q: want pprof", f)
	}
	if s := q.Get("sampleRate"); s != "" {
		if in.SampleRate, err = strconv.Atoi(s); err != nil || in.SampleRate <= 0 {
			return Ingest{}, fmt.Errorf("sampleRate %q: want Hz", s)
		}
	}
	if err := r.ParseMultipartForm(64 << 20); err != nil {
		return Ingest{}, fmt.Errorf("multipart body: %w", err)
	}
	f, _, err := r.FormFile("profile")
	if err != nil {
		return Ingest{}, fmt.Errorf("multipart field profile: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return Ingest{}, err
	}
	if in.Profile, err = profile.Parse(bytes.NewReader(b)); err != nil {
		return Ingest{}, fmt.Errorf("profile: %w", err)
	}
	if err := in.Profile.CheckValid(); err != nil {
		return Ingest{}, fmt.Errorf("profile: %w", err)
	}
	return in, nil
}

// Ingests returns what was taken so far, and the requests refused.
func (p *Pyroscope) Ingests() ([]Ingest, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Ingest(nil), p.ingests...), append([]string(nil), p.errs...)
}

// SamplesByLeaf adds up the first sample value of profiles by leaf function name.
func SamplesByLeaf(ps ...*profile.Profile) map[string]int64 {
	out := map[string]int64{}
	for _, p := range ps {
		for _, s := range p.Sample {
			if len(s.Location) == 0 || len(s.Location[0].Line) == 0 || len(s.Value) == 0 {
				continue
			}
			out[s.Location[0].Line[0].Function.Name] += s.Value[0]
		}
	}
	return out
}

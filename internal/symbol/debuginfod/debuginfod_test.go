package debuginfod

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/testutil"
)

// buildFixture compiles testdata/prog.c into dir and returns its path and
// build-id.
func buildFixture(t testing.TB, dir, name string) (string, []byte) {
	t.Helper()
	testutil.RequireTool(t, "gcc")
	p := filepath.Join(dir, name)
	src, _ := os.ReadFile("testdata/prog.c")
	// A distinct constant per name gives each build its own build-id.
	src = append(src, []byte(fmt.Sprintf("const char *stax_fixture_name = %q;\n", name))...)
	cfile := filepath.Join(t.TempDir(), name+".c")
	os.WriteFile(cfile, src, 0o644)
	if out, err := exec.Command("gcc", "-g", "-O1", "-Wl,--build-id", "-o", p, cfile).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	id, err := debugfile.ReadBuildID(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, id
}

// server serves files by build-id and counts requests.
type server struct {
	files    map[string]string // hex build-id -> path
	requests atomic.Int64
	status   atomic.Int64 // when non-zero, answer with this status
	delay    time.Duration
	chunked  bool
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if st := s.status.Load(); st != 0 {
		http.Error(w, "forced", int(st))
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 3 || parts[0] != "buildid" || parts[2] != "debuginfo" {
		http.NotFound(w, r)
		return
	}
	p, ok := s.files[parts[1]]
	if !ok {
		http.NotFound(w, r)
		return
	}
	data, err := os.ReadFile(p)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	if s.delay > 0 {
		// Send the body slowly in two halves.
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		time.Sleep(s.delay)
		w.Write(data[len(data)/2:])
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	w.Write(data)
}

func newServer(t *testing.T, files map[string]string) (*server, string) {
	s := &server{files: files}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

func TestFetch(t *testing.T) {
	dir := t.TempDir()
	p, id := buildFixture(t, dir, "prog")
	other, otherID := buildFixture(t, dir, "other")
	wrongID := bytes.Repeat([]byte{0xee}, 20)
	srv, url := newServer(t, map[string]string{
		hex.EncodeToString(id):      p,
		hex.EncodeToString(wrongID): other, // serves a file with another build-id
	})
	_ = otherID
	now := time.Unix(1e9, 0)
	c := New([]string{url}, t.TempDir())
	c.now = func() time.Time { return now }
	ctx := context.Background()

	got, err := c.Fetch(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got != c.CachePath(id) {
		t.Fatalf("path %s", got)
	}
	if gid, _ := debugfile.ReadBuildID(got); !bytes.Equal(gid, id) {
		t.Fatalf("cached file has build-id %x", gid)
	}
	n := srv.requests.Load()
	if _, err := c.Fetch(ctx, id); err != nil || srv.requests.Load() != n {
		t.Fatalf("cached file fetched again: %v", err)
	}

	tests := []struct {
		name string
		id   []byte
	}{
		{"missing", bytes.Repeat([]byte{0xab}, 20)},
		{"wrong build-id", wrongID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.requests.Load()
			_, err := c.Fetch(ctx, tt.id)
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("err = %v", err)
			}
			if _, err := os.Stat(c.CachePath(tt.id)); err == nil {
				t.Fatal("bad file cached")
			}
			// Remembered: no new request.
			if _, err := c.Fetch(ctx, tt.id); !errors.Is(err, ErrNotFound) || srv.requests.Load() != before+1 {
				t.Fatalf("miss not remembered: %v, %d requests", err, srv.requests.Load()-before)
			}
			// Expired: asked again.
			now = now.Add(DefaultNegativeTTL + time.Second)
			c.Fetch(ctx, tt.id)
			if srv.requests.Load() != before+2 {
				t.Fatal("expired miss not retried")
			}
		})
	}
	left, _ := os.ReadDir(c.CacheDir)
	for _, e := range left {
		if strings.HasPrefix(e.Name(), ".debuginfo-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestTransientErrorsNotCached(t *testing.T) {
	dir := t.TempDir()
	p, id := buildFixture(t, dir, "prog")
	srv, url := newServer(t, map[string]string{hex.EncodeToString(id): p})
	srv.status.Store(http.StatusServiceUnavailable)
	c := New([]string{url}, t.TempDir())
	if _, err := c.Fetch(context.Background(), id); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want a transient error", err)
	}
	srv.status.Store(0)
	if _, err := c.Fetch(context.Background(), id); err != nil {
		t.Fatalf("retry failed: %v", err)
	}
	// An unreachable server is also transient.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + l.Addr().String()
	l.Close()
	c2 := New([]string{dead}, t.TempDir())
	c2.Timeout = time.Second
	if _, err := c2.Fetch(context.Background(), id); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want a transient error", err)
	}
	c2.mu.Lock()
	n := len(c2.misses)
	c2.mu.Unlock()
	if n != 0 {
		t.Fatal("network error cached as a miss")
	}
}

func TestSecondServer(t *testing.T) {
	dir := t.TempDir()
	p, id := buildFixture(t, dir, "prog")
	_, empty := newServer(t, nil)
	_, full := newServer(t, map[string]string{hex.EncodeToString(id): p})
	c := New([]string{empty, full}, t.TempDir())
	if _, err := c.Fetch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

func TestSizeCap(t *testing.T) {
	dir := t.TempDir()
	p, id := buildFixture(t, dir, "prog")
	for _, chunked := range []bool{false, true} {
		srv, url := newServer(t, map[string]string{hex.EncodeToString(id): p})
		if chunked {
			srv.delay = time.Millisecond // no Content-Length
		}
		c := New([]string{url}, t.TempDir())
		c.MaxSize = 100
		_, err := c.Fetch(context.Background(), id)
		if err == nil || !strings.Contains(err.Error(), "limit") {
			t.Fatalf("chunked=%v: err = %v", chunked, err)
		}
	}
}

func TestSingleflight(t *testing.T) {
	dir := t.TempDir()
	p, id := buildFixture(t, dir, "prog")
	srv, url := newServer(t, map[string]string{hex.EncodeToString(id): p})
	srv.delay = 200 * time.Millisecond
	c := New([]string{url}, t.TempDir())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := c.Fetch(context.Background(), id); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d requests for one build-id", n)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgress(t *testing.T) {
	dir := t.TempDir()
	p, id := buildFixture(t, dir, "prog")
	srv, url := newServer(t, map[string]string{hex.EncodeToString(id): p})
	srv.delay = 300 * time.Millisecond
	var out syncBuffer
	c := New([]string{url}, t.TempDir())
	c.Progress = &out
	c.ProgressDelay = 50 * time.Millisecond
	if _, err := c.Fetch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "downloading debug info "+hex.EncodeToString(id)) || !strings.HasSuffix(s, " done\n") {
		t.Fatalf("progress output %q", s)
	}
	// Fast downloads print nothing.
	var quiet syncBuffer
	c2 := New([]string{url}, t.TempDir())
	c2.Progress = &quiet
	srv.delay = 0
	if _, err := c2.Fetch(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if quiet.String() != "" {
		t.Fatalf("progress for a fast download: %q", quiet.String())
	}
}

func TestFromEnv(t *testing.T) {
	urlsDir := t.TempDir()
	os.WriteFile(filepath.Join(urlsDir, "a.urls"), []byte("https://debuginfod.example.org/\n"), 0o644)
	os.WriteFile(filepath.Join(urlsDir, "b.urls"), []byte("http://127.0.0.1:1 ftp://bad\n"), 0o644)
	tests := []struct {
		name    string
		env     map[string]string
		urls    []string
		cache   string
		timeout time.Duration
		wantErr bool
	}{
		{name: "env urls", env: map[string]string{"DEBUGINFOD_URLS": "http://a:1/ https://b;http://c", "DEBUGINFOD_CACHE_PATH": "/c"},
			urls: []string{"http://a:1", "https://b", "http://c"}, cache: "/c", timeout: DefaultTimeout},
		{name: "urls files", env: map[string]string{"XDG_CACHE_HOME": "/x", "DEBUGINFOD_TIMEOUT": "5"},
			urls: []string{"https://debuginfod.example.org", "http://127.0.0.1:1"}, cache: "/x/stax/debuginfod", timeout: 5 * time.Second},
		{name: "empty disables", env: map[string]string{"DEBUGINFOD_URLS": "", "HOME": "/h"}, cache: "/h/.cache/stax/debuginfod", timeout: DefaultTimeout},
		{name: "bad timeout", env: map[string]string{"DEBUGINFOD_TIMEOUT": "soon", "HOME": "/h"}, wantErr: true},
		{name: "no cache dir", env: map[string]string{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromEnv(Env{URLsDir: urlsDir, Lookup: func(k string) (string, bool) {
				v, ok := tt.env[k]
				return v, ok
			}})
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(c.URLs) != fmt.Sprint(tt.urls) || c.CacheDir != tt.cache || c.Timeout != tt.timeout {
				t.Fatalf("got %v %q %v", c.URLs, c.CacheDir, c.Timeout)
			}
		})
	}
}

func FuzzSplitURLs(f *testing.F) {
	f.Add("http://a:1/ https://b;http://c")
	f.Add("ftp://x \n\t;;")
	f.Fuzz(func(t *testing.T, s string) {
		for _, u := range SplitURLs(s) {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				t.Fatalf("bad URL %q", u)
			}
		}
	})
}

// freePort returns a TCP port that is free on 127.0.0.1.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestRealDebuginfod(t *testing.T) {
	bin := testutil.RequireTool(t, "debuginfod")
	served := t.TempDir()
	p, id := buildFixture(t, served, "prog")
	_ = p
	port := freePort(t)
	db := filepath.Join(t.TempDir(), "db.sqlite")
	cmd := exec.Command(bin, "-F", "-p", fmt.Sprint(port), "-d", db, "-t", "1", "-g", "0", served)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	c := New([]string{url}, t.TempDir())
	c.NegativeTTL = 0 // the server may not have scanned the file yet
	deadline := time.Now().Add(60 * time.Second)
	var path string
	var err error
	for {
		path, err = c.Fetch(context.Background(), id)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fetch: %v\nserver log:\n%s", err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	gid, err := debugfile.ReadBuildID(path)
	if err != nil || !bytes.Equal(gid, id) {
		t.Fatalf("downloaded build-id %x, %v", gid, err)
	}
	if _, err := c.Fetch(context.Background(), bytes.Repeat([]byte{0x42}, 20)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown build-id: %v", err)
	}
}

func TestFetchSource(t *testing.T) {
	id := bytes.Repeat([]byte{0xab}, 20)
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.EscapedPath())
		if r.URL.Path == "/buildid/"+hex.EncodeToString(id)+"/source/src/my dir/prog.c" {
			io.WriteString(w, "int main(void) { return 0; }\n")
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	c := New([]string{srv.URL}, t.TempDir())
	p, err := c.FetchSource(context.Background(), id, "/src/my dir/prog.c")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), "int main") {
		t.Errorf("fetched %q", b)
	}
	if _, err := c.FetchSource(context.Background(), id, "/src/my dir/prog.c"); err != nil || len(asked) != 1 {
		t.Errorf("second fetch: %v after %d requests, want the cached copy", err, len(asked))
	}
	if _, err := c.FetchSource(context.Background(), id, "/src/missing.c"); err == nil {
		t.Errorf("missing source: no error")
	}
	if _, err := c.FetchSource(context.Background(), id, "relative.c"); err == nil {
		t.Errorf("relative path: no error")
	}
}

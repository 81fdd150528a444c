// Package debuginfod downloads separate debug files by build-id from
// debuginfod servers for stax.
//
// Servers come from DEBUGINFOD_URLS (separated by spaces or semicolons)
// or, when that variable is unset, from /etc/debuginfod/*.urls. Files are
// cached under DEBUGINFOD_CACHE_PATH, else $XDG_CACHE_HOME/stax/debuginfod
// (~/.cache/stax/debuginfod), as <build-id>/debuginfo. Downloads go to a
// temporary file that is renamed into place only after the file's own
// build-id has been checked. Concurrent requests for one build-id share a
// download; build-ids that every server reports as missing are remembered
// for a while, network failures are not.
package debuginfod

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stax-profiler/stax/internal/symbol/debugfile"
)

// Defaults.
const (
	DefaultTimeout       = 90 * time.Second
	DefaultMaxSize       = 4 << 30
	DefaultNegativeTTL   = 10 * time.Minute
	DefaultProgressDelay = time.Second
	DefaultURLsDir       = "/etc/debuginfod"
)

// ErrNotFound is returned when no server has the requested file.
var ErrNotFound = errors.New("debug file not found on any debuginfod server")

// ErrNoServers is returned when no server is configured.
var ErrNoServers = errors.New("no debuginfod servers configured (DEBUGINFOD_URLS)")

// Client fetches debug files. Create it with [New] or [FromEnv]; its
// fields must not change once it is in use. It is safe for concurrent use.
type Client struct {
	URLs          []string      // server base URLs
	CacheDir      string        // local cache directory
	Timeout       time.Duration // wait for a server to start answering
	MaxSize       int64         // largest file accepted, in bytes
	NegativeTTL   time.Duration // how long a miss is remembered
	Progress      io.Writer     // progress lines for slow downloads; nil for none
	ProgressDelay time.Duration // quiet period before the first progress line
	HTTP          *http.Client

	mu       sync.Mutex
	inflight map[string]*call
	misses   map[string]time.Time
	now      func() time.Time
}

type call struct {
	done chan struct{}
	path string
	err  error
}

// New returns a client for urls caching into cacheDir, with default
// limits.
func New(urls []string, cacheDir string) *Client {
	return &Client{
		URLs:          urls,
		CacheDir:      cacheDir,
		Timeout:       DefaultTimeout,
		MaxSize:       DefaultMaxSize,
		NegativeTTL:   DefaultNegativeTTL,
		ProgressDelay: DefaultProgressDelay,
	}
}

// Env describes where configuration is read from.
type Env struct {
	Lookup  func(string) (string, bool) // os.LookupEnv if nil
	URLsDir string                      // DefaultURLsDir if ""
}

// FromEnv builds a client from the environment: DEBUGINFOD_URLS (or the
// *.urls files), DEBUGINFOD_TIMEOUT (seconds), DEBUGINFOD_MAXSIZE (bytes)
// and DEBUGINFOD_CACHE_PATH. Progress goes to os.Stderr.
func FromEnv(e Env) (*Client, error) {
	look := e.Lookup
	if look == nil {
		look = os.LookupEnv
	}
	var urls []string
	if v, ok := look("DEBUGINFOD_URLS"); ok {
		urls = SplitURLs(v)
	} else {
		dir := e.URLsDir
		if dir == "" {
			dir = DefaultURLsDir
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.urls"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil || len(data) > 1<<16 {
				continue
			}
			urls = append(urls, SplitURLs(string(data))...)
		}
	}
	cache := ""
	if v, ok := look("DEBUGINFOD_CACHE_PATH"); ok && v != "" {
		cache = v
	} else if v, ok := look("XDG_CACHE_HOME"); ok && v != "" {
		cache = filepath.Join(v, "stax", "debuginfod")
	} else if v, ok := look("HOME"); ok && v != "" {
		cache = filepath.Join(v, ".cache", "stax", "debuginfod")
	} else {
		return nil, errors.New("configure debuginfod: no cache directory (set DEBUGINFOD_CACHE_PATH)")
	}
	c := New(urls, cache)
	c.Progress = os.Stderr
	if v, ok := look("DEBUGINFOD_TIMEOUT"); ok && v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("configure debuginfod: bad DEBUGINFOD_TIMEOUT %q", v)
		}
		c.Timeout = time.Duration(n) * time.Second
	}
	if v, ok := look("DEBUGINFOD_MAXSIZE"); ok && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("configure debuginfod: bad DEBUGINFOD_MAXSIZE %q", v)
		}
		c.MaxSize = n
	}
	return c, nil
}

// SplitURLs splits a server list on spaces, tabs, newlines and semicolons,
// dropping trailing slashes and entries that are not http(s) URLs.
func SplitURLs(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == ';'
	}) {
		u, err := url.Parse(f)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		// url.Parse lowercases the scheme; do the same in the result.
		f = u.Scheme + f[len(u.Scheme):]
		out = append(out, strings.TrimRight(f, "/"))
	}
	return out
}

// CachePath returns where the debug file for buildID is cached.
func (c *Client) CachePath(buildID []byte) string {
	return filepath.Join(c.CacheDir, hex.EncodeToString(buildID), "debuginfo")
}

func (c *Client) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// Fetch returns the path of a local copy of the debug file for buildID,
// downloading it when it is not cached.
func (c *Client) Fetch(ctx context.Context, buildID []byte) (string, error) {
	if len(buildID) < 2 || len(buildID) > 64 {
		return "", fmt.Errorf("fetch debug file: bad build-id length %d", len(buildID))
	}
	id := hex.EncodeToString(buildID)
	dst := c.CachePath(buildID)
	if st, err := os.Stat(dst); err == nil && st.Mode().IsRegular() {
		return dst, nil
	}
	if len(c.URLs) == 0 {
		return "", ErrNoServers
	}
	c.mu.Lock()
	if t, ok := c.misses[id]; ok {
		if c.clock().Before(t) {
			c.mu.Unlock()
			return "", fmt.Errorf("fetch debug file %s: %w (cached)", id, ErrNotFound)
		}
		delete(c.misses, id)
	}
	if cl := c.inflight[id]; cl != nil {
		c.mu.Unlock()
		select {
		case <-cl.done:
			return cl.path, cl.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	cl := &call{done: make(chan struct{})}
	if c.inflight == nil {
		c.inflight = map[string]*call{}
	}
	c.inflight[id] = cl
	c.mu.Unlock()

	cl.path, cl.err = c.fetch(ctx, buildID, id, dst)

	c.mu.Lock()
	delete(c.inflight, id)
	if errors.Is(cl.err, ErrNotFound) {
		if c.misses == nil {
			c.misses = map[string]time.Time{}
		}
		c.misses[id] = c.clock().Add(c.NegativeTTL)
	}
	c.mu.Unlock()
	close(cl.done)
	return cl.path, cl.err
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ResponseHeaderTimeout: c.Timeout,
		TLSHandshakeTimeout:   c.Timeout,
	}}
}

func (c *Client) fetch(ctx context.Context, buildID []byte, id, dst string) (string, error) {
	misses := 0
	var errs []error
	hc := c.httpClient()
	for _, base := range c.URLs {
		err := c.download(ctx, hc, base+"/buildid/"+id+"/debuginfo", buildID, dst, checkBuildID(buildID))
		if err == nil {
			return dst, nil
		}
		if errors.Is(err, ErrNotFound) {
			misses++
			continue
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("fetch debug file %s: %w", id, ctx.Err())
		}
		errs = append(errs, err)
	}
	if misses == len(c.URLs) {
		return "", fmt.Errorf("fetch debug file %s: %w", id, ErrNotFound)
	}
	return "", fmt.Errorf("fetch debug file %s: %w", id, errors.Join(errs...))
}

// checkBuildID accepts a downloaded file only if it is an ELF file with buildID.
func checkBuildID(buildID []byte) func(path, u string) error {
	return func(path, u string) error {
		got, err := debugfile.ReadBuildID(path)
		if err != nil {
			return fmt.Errorf("check %s: %w (%w)", u, err, ErrNotFound)
		}
		if !bytes.Equal(got, buildID) {
			return fmt.Errorf("check %s: build-id %x, want %x (%w)", u, got, buildID, ErrNotFound)
		}
		return nil
	}
}

// MaxSourceSize bounds a downloaded source file.
const MaxSourceSize = 16 << 20

// FetchSource returns the path of a local copy of the source file path (absolute, as the
// DWARF of buildID names it), downloading it from /buildid/ID/source/PATH when it is not
// cached. Misses are not remembered: sources are asked for once per annotate.
func (c *Client) FetchSource(ctx context.Context, buildID []byte, path string) (string, error) {
	if len(buildID) < 2 || len(buildID) > 64 || !filepath.IsAbs(path) || strings.Contains(path, "/../") {
		return "", fmt.Errorf("fetch source %s: not an absolute path with a build-id", path)
	}
	if len(c.URLs) == 0 {
		return "", ErrNoServers
	}
	id := hex.EncodeToString(buildID)
	dst := filepath.Join(c.CacheDir, id, "source", strings.ReplaceAll(path, "/", "#"))
	if st, err := os.Stat(dst); err == nil && st.Mode().IsRegular() {
		return dst, nil
	}
	hc := c.httpClient()
	var errs []error
	for _, base := range c.URLs {
		err := c.downloadLimited(ctx, hc, base+"/buildid/"+id+"/source"+escapePath(path), buildID, dst, nil, MaxSourceSize)
		if err == nil {
			return dst, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("fetch source %s: %w", path, errors.Join(errs...))
}

// escapePath escapes each segment of an absolute path for a URL, keeping the slashes.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// download fetches u into dst, accepting it only if verify passes. A 404 (or an answer
// that is not the right file) reports ErrNotFound; other failures are transient.
func (c *Client) download(ctx context.Context, hc *http.Client, u string, buildID []byte, dst string, verify func(path, u string) error) error {
	limit := c.MaxSize
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	return c.downloadLimited(ctx, hc, u, buildID, dst, verify, limit)
}

func (c *Client) downloadLimited(ctx context.Context, hc *http.Client, u string, buildID []byte, dst string, verify func(path, u string) error, limit int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("request %s: %w", u, err)
	}
	req.Header.Set("User-Agent", "stax")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("get %s: %w", u, ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("get %s: %s", u, resp.Status)
	}
	if resp.ContentLength > limit {
		return fmt.Errorf("get %s: file of %d bytes exceeds limit %d", u, resp.ContentLength, limit)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("create debuginfod cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".debuginfo-*")
	if err != nil {
		return fmt.Errorf("create debuginfod cache file: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename

	pw := c.startProgress(buildID, u, resp.ContentLength)
	n, err := io.Copy(tmp, io.TeeReader(io.LimitReader(resp.Body, limit+1), pw))
	pw.stop(err == nil && n <= limit)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("download %s: %w", u, err)
	}
	if n > limit {
		return fmt.Errorf("download %s: file exceeds limit %d", u, limit)
	}
	if verify != nil {
		if err := verify(tmp.Name(), u); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("store debug file: %w", err)
	}
	return nil
}

// progress reports a slow download on c.Progress.
type progress struct {
	mu      sync.Mutex
	n       int64
	printed bool
	quit    chan struct{}
	done    chan struct{}
	out     io.Writer
	label   string
	total   int64
}

func (p *progress) Write(b []byte) (int, error) {
	if p != nil {
		p.mu.Lock()
		p.n += int64(len(b))
		p.mu.Unlock()
	}
	return len(b), nil
}

func (c *Client) startProgress(buildID []byte, u string, total int64) *progress {
	p := &progress{quit: make(chan struct{}), done: make(chan struct{}), out: c.Progress, total: total}
	if c.Progress == nil {
		close(p.done)
		return p
	}
	host := u
	if pu, err := url.Parse(u); err == nil {
		host = pu.Host
	}
	p.label = fmt.Sprintf("stax: downloading debug info %x from %s", buildID, host)
	delay := c.ProgressDelay
	if delay <= 0 {
		delay = DefaultProgressDelay
	}
	go func() {
		defer close(p.done)
		timer := time.NewTimer(delay)
		defer timer.Stop()
		tick := (<-chan time.Time)(nil)
		var ticker *time.Ticker
		for {
			select {
			case <-p.quit:
				if ticker != nil {
					ticker.Stop()
				}
				return
			case <-timer.C:
				ticker = time.NewTicker(time.Second)
				tick = ticker.C
				p.print()
			case <-tick:
				p.print()
			}
		}
	}()
	return p
}

func (p *progress) print() {
	p.mu.Lock()
	n := p.n
	p.printed = true
	p.mu.Unlock()
	if p.total > 0 {
		fmt.Fprintf(p.out, "\r%s: %.1f/%.1f MiB", p.label, float64(n)/(1<<20), float64(p.total)/(1<<20))
	} else {
		fmt.Fprintf(p.out, "\r%s: %.1f MiB", p.label, float64(n)/(1<<20))
	}
}

func (p *progress) stop(ok bool) {
	select {
	case <-p.done:
	default:
		close(p.quit)
		<-p.done
	}
	p.mu.Lock()
	printed := p.printed
	p.mu.Unlock()
	if printed {
		status := "done"
		if !ok {
			status = "failed"
		}
		p.print()
		fmt.Fprintf(p.out, " %s\n", status)
	}
}

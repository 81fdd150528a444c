// Package client finds runs, live or stored, and asks them questions. The CLI talks to runs
// only through it.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// ErrNotFound says a run does not exist.
var ErrNotFound = errors.New("not found")

// Run is a run to query: live (answered by its recorder) or stored.
type Run struct {
	ID   string
	Live bool
	File string // a saved run's file outside the store (stax save), else empty
	sock string
	hc   *http.Client
}

// StoredPath is where the run's file is.
func (r *Run) StoredPath() string {
	if r.File != "" {
		return r.File
	}
	return store.Path(r.ID)
}

// RequestError is a live run's refusal of a malformed query (bad flag values): asking the
// stored copy would not help.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

// IsFile says whether a --run value names a saved file rather than a run id.
func IsFile(id string) bool {
	return strings.ContainsRune(id, '/') || strings.HasSuffix(id, ".stax")
}

func newLive(id, sock string) *Run {
	return &Run{ID: id, Live: true, sock: sock, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}}
}

// LiveRuns lists the runs whose recorder answers, newest first.
func LiveRuns() []*Run {
	dir, err := api.SocketDir()
	if err != nil {
		return nil
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sock") {
			names = append(names, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	var out []*Run
	for _, n := range names {
		sock := filepath.Join(dir, n)
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err != nil {
			// A recorder that died (kill -9, a crash) leaves its socket behind: nothing
			// listens on it, so it is removed; the run's last checkpoint still answers.
			if errors.Is(err, syscall.ECONNREFUSED) {
				os.Remove(sock)
			}
			continue
		}
		c.Close()
		out = append(out, newLive(strings.TrimSuffix(n, ".sock"), sock))
	}
	return out
}

// Pick chooses the run named id, else the newest live run, else the newest stored run.
func Pick(id string) (*Run, error) {
	if id != "" && IsFile(id) {
		m, err := store.ReadMeta(id)
		if err != nil {
			return nil, err
		}
		return &Run{ID: m.ID, File: id}, nil
	}
	if id != "" {
		if !store.ValidID(id) {
			return nil, fmt.Errorf("run %q: %w (stax list shows the runs)", id, ErrNotFound)
		}
		for _, r := range LiveRuns() {
			if r.ID == id {
				return r, nil
			}
		}
		if _, err := os.Stat(store.Path(id)); err != nil {
			return nil, fmt.Errorf("run %q: %w (stax list shows the runs)", id, ErrNotFound)
		}
		return &Run{ID: id}, nil
	}
	if live := LiveRuns(); len(live) > 0 {
		return live[0], nil
	}
	ids, err := store.List()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no runs yet: %w (start one with: stax record -- CMD)", ErrNotFound)
	}
	// The newest run whose file is whole: a damaged file is skipped (stax list shows it).
	for _, id := range ids {
		if store.Check(store.Path(id)) == nil {
			return &Run{ID: id}, nil
		}
	}
	return nil, fmt.Errorf("every stored run is damaged: %w (stax list shows them; stax rm removes them)", ErrNotFound)
}

// Stored lists the stored runs, newest first, with their meta read from the file's header
// alone; a file that cannot be read is listed with the reason in Err.
func Stored() ([]StoredRun, error) {
	ids, err := store.List()
	if err != nil {
		return nil, err
	}
	out := make([]StoredRun, 0, len(ids))
	for _, id := range ids {
		m, err := store.ReadMeta(store.Path(id))
		out = append(out, StoredRun{ID: id, Meta: m, Err: err})
	}
	return out, nil
}

// StoredRun is one file of the run store.
type StoredRun struct {
	ID   string
	Meta store.Meta
	Err  error // the file is damaged
}

// Get asks a live run and decodes the JSON answer into out.
func (r *Run) Get(ctx context.Context, path string, q url.Values, out any) error {
	return r.do(ctx, http.MethodGet, path, q, out)
}

// Post sends a command to a live run.
func (r *Run) Post(ctx context.Context, path string, out any) error {
	return r.do(ctx, http.MethodPost, path, nil, out)
}

func (r *Run) do(ctx context.Context, method, path string, q url.Values, out any) error {
	if !r.Live {
		return fmt.Errorf("run %s is not live", r.ID)
	}
	u := "http://stax" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return fmt.Errorf("ask run %s: %w", r.ID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return fmt.Errorf("ask run %s: %w", r.ID, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e api.Error
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			if resp.StatusCode == http.StatusBadRequest {
				return &RequestError{e.Error}
			}
			return errors.New(e.Error)
		}
		return fmt.Errorf("ask run %s: %s", r.ID, resp.Status)
	}
	return json.Unmarshal(body, out)
}

// Load returns the whole run: from the recorder when live, else from the store.
func (r *Run) Load(ctx context.Context) (*store.Run, error) {
	if r.Live {
		var run store.Run
		if err := r.Get(ctx, "/v1/run", nil, &run); err == nil {
			return &run, nil
		}
		// The recorder may have just finished: its final copy is in the store.
	}
	return store.Load(r.StoredPath())
}

// Package client finds runs, live or stored, and asks them questions. The CLI talks to runs
// only through it.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
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
	Why  string // why Pick chose it when no run was named ("newest from this terminal"), else empty
	sock string
	hc   *http.Client
	pid  atomic.Int32 // a live run's recorder, from its socket (see Pid)
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

func newLive(id, sock string, pid int) *Run {
	r := &Run{ID: id, Live: true, sock: sock}
	r.pid.Store(int32(pid))
	r.hc = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", sock)
			if err == nil {
				if p := peerPid(c); p > 0 {
					r.pid.Store(int32(p))
				}
			}
			return c, err
		},
	}}
	return r
}

// LiveRuns lists the runs whose recorder listens, newest first. It does not ask them
// anything: a stopped recorder's socket still accepts (see Run.Stopped).
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
		pid := peerPid(c)
		c.Close()
		out = append(out, newLive(strings.TrimSuffix(n, ".sock"), sock, pid))
	}
	return out
}

// Pick chooses the run named id, else the default run (see pickDefault): live first, then
// the newest stored run with samples, from this terminal first.
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
	return pickDefault()
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

// ErrGone says that a live run's recorder is no longer there (it finished or died after
// the run was found): nothing listens on its socket. Its stored copy is what is left.
var ErrGone = errors.New("its recorder is gone")

// AnswerError is a live run's answer other than a result: what the recorder said, and
// the HTTP status it said it with.
type AnswerError struct {
	Code int
	Msg  string
}

func (e *AnswerError) Error() string { return e.Msg }

// Get asks a live run and decodes the JSON answer into out. A recorder that does not
// answer within 30 s, or is stopped, gives a *NoAnswerError.
func (r *Run) Get(ctx context.Context, path string, q url.Values, out any) error {
	return r.do(ctx, http.MethodGet, path, q, out, queryTimeout)
}

// LongPoll is Get for a query that waits on the run (stax wait): it is bounded by ctx
// alone, and by the recorder being stopped.
func (r *Run) LongPoll(ctx context.Context, path string, q url.Values, out any) error {
	return r.do(ctx, http.MethodGet, path, q, out, 0)
}

// Post sends a command to a live run.
func (r *Run) Post(ctx context.Context, path string, out any) error {
	return r.do(ctx, http.MethodPost, path, nil, out, stopTimeout)
}

// PostQuery sends a command with parameters to a live run.
func (r *Run) PostQuery(ctx context.Context, path string, q url.Values, out any) error {
	return r.do(ctx, http.MethodPost, path, q, out, queryTimeout)
}

// do sends a request and decodes its JSON answer, bounded by timeout (0: by ctx alone) and
// by the recorder being stopped.
func (r *Run) do(ctx context.Context, method, path string, q url.Values, out any, timeout time.Duration) error {
	ctx, release, err := r.bound(ctx, method, timeout)
	if err != nil {
		return err
	}
	defer release()
	began := time.Now()
	resp, err := r.request(ctx, method, path, q)
	if err != nil {
		return r.explain(ctx, began, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return r.explain(ctx, began, fmt.Errorf("ask run %s: %w", r.ID, err))
	}
	return json.Unmarshal(body, out)
}

// bound returns ctx limited by timeout (0: none) and by a watch on the recorder, which
// gives up once it has been stopped for a while; release ends both. A command (anything
// but a GET) is not sent to a recorder that is stopped now: queued in its socket, it would
// take effect whenever it resumes, long after this client gave up on it.
func (r *Run) bound(ctx context.Context, method string, timeout time.Duration) (context.Context, func(), error) {
	if !r.Live {
		return nil, nil, fmt.Errorf("run %s is not live", r.ID)
	}
	if method != http.MethodGet {
		if na, stopped := r.Stopped(); stopped {
			return nil, nil, na
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	cancelTimeout := context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancelTimeout = context.WithTimeout(ctx, timeout)
	}
	stopWatch := r.watch(ctx, cancel)
	return ctx, func() {
		stopWatch()
		cancelTimeout()
		cancel(nil)
	}, nil
}

// explain turns a request's failure into a *NoAnswerError when the recorder was given up
// on, else returns err.
func (r *Run) explain(ctx context.Context, began time.Time, err error) error {
	if na := r.noAnswer(ctx, began); na != nil {
		return na
	}
	return err
}

// BusyRetryFor is how long a query asks again a recorder that answers it is too busy.
var BusyRetryFor = 10 * time.Second

// request sends a request to the live run; an answer other than 200 is returned as its
// error (a RequestError for 400, else an AnswerError), a recorder that is not there as
// ErrGone.
func (r *Run) request(ctx context.Context, method, path string, q url.Values) (*http.Response, error) {
	if !r.Live {
		return nil, fmt.Errorf("run %s is not live", r.ID)
	}
	u := "http://stax" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var resp *http.Response
	began := time.Now()
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err = r.hc.Do(req)
		if err != nil {
			if gone(err) {
				return nil, fmt.Errorf("ask run %s: %w", r.ID, ErrGone)
			}
			return nil, fmt.Errorf("ask run %s: %w", r.ID, err)
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		// A recorder answering too many clients at once says so (503) and asks to be
		// asked again; a query is, for BusyRetryFor, then the user is told.
		if resp.StatusCode != http.StatusServiceUnavailable || method != http.MethodGet || time.Since(began)+pause > BusyRetryFor {
			break
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		select {
		case <-time.After(pause + rand.N(pause)):
		case <-ctx.Done():
			return nil, fmt.Errorf("ask run %s: %w", r.ID, context.Cause(ctx))
		}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e api.Error
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		if resp.StatusCode == http.StatusBadRequest {
			return nil, &RequestError{e.Error}
		}
		return nil, &AnswerError{resp.StatusCode, e.Error}
	}
	return nil, &AnswerError{resp.StatusCode, fmt.Sprintf("ask run %s: %s", r.ID, resp.Status)}
}

// gone says whether a request failed because nothing listens on the run's socket any
// more: it was removed (the recorder finished) or nothing accepts on it (it died).
func gone(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" &&
		(errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT))
}

// Load returns the whole run: streamed from the recorder when live (an error wrapping
// ErrGone if the recorder is no longer there; the caller decides whether the stored copy
// will do), else read from the store.
func (r *Run) Load(ctx context.Context) (*store.Run, error) {
	if !r.Live {
		return store.Load(r.StoredPath())
	}
	var buf bytes.Buffer
	f, err := r.fetch(ctx, &buf, false)
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if err := store.FinishStream(sliceAt(b), f.sum, f.size); err != nil {
		return nil, err
	}
	run, err := store.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("ask run %s: %w", r.ID, err)
	}
	return run, nil
}

// LoadStored reads the run's stored copy: its last checkpoint while it records, its
// final copy once it has finished.
func (r *Run) LoadStored() (*store.Run, error) { return store.Load(r.StoredPath()) }

// LoadStoredParts reads the parts of the run's stored copy that a view needs (see
// store.LoadParts).
func (r *Run) LoadStoredParts(need store.Parts) (*store.Run, error) {
	return store.LoadParts(r.StoredPath(), need)
}

// Saved is what Save wrote.
type Saved struct {
	Meta   store.Meta
	Size   int64 // bytes of the file
	Kept   int   // functions whose code the file keeps
	Failed int   // functions whose code could not be read
}

// Save writes the live run to path as stax save keeps runs (its code made self-contained),
// streamed from its recorder as it is encoded: into a temporary file beside path, which
// replaces path once it is whole. A recorder that is no longer there is an error wrapping
// ErrGone.
func (r *Run) Save(ctx context.Context, path string) (Saved, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Saved{}, fmt.Errorf("save run: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".stax-save-*")
	if err != nil {
		return Saved{}, fmt.Errorf("save run: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	saved, err := r.SaveTo(ctx, tmp)
	if err != nil {
		return Saved{}, err
	}
	if err := tmp.Close(); err != nil {
		return Saved{}, fmt.Errorf("save run: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return Saved{}, fmt.Errorf("save run: %w", err)
	}
	return saved, nil
}

// SaveTo streams the live run as a saved-run file into f, a new empty file (the header is
// finished last, at its start), and checks it.
func (r *Run) SaveTo(ctx context.Context, f *os.File) (Saved, error) {
	bw := bufio.NewWriterSize(f, 1<<20)
	fe, err := r.fetch(ctx, bw, true)
	if err != nil {
		return Saved{}, err
	}
	if err := bw.Flush(); err != nil {
		return Saved{}, fmt.Errorf("save run: %w", err)
	}
	if err := store.FinishStream(f, fe.sum, fe.size); err != nil {
		return Saved{}, fmt.Errorf("save run: %w", err)
	}
	if err := f.Sync(); err != nil {
		return Saved{}, fmt.Errorf("save run: %w", err)
	}
	meta, err := store.ReadMeta(f.Name())
	if err != nil {
		return Saved{}, fmt.Errorf("ask run %s: %w", r.ID, err)
	}
	return Saved{Meta: meta, Size: int64(fe.size) + int64(fe.header), Kept: fe.kept, Failed: fe.failed}, nil
}

// fetched is what a streamed run's trailers said, checked against the bytes received.
type fetched struct {
	sum          uint32
	size         uint64 // payload bytes
	header       int    // header bytes before them
	kept, failed int
}

// fetch streams the live run as a saved-run file into w (see api.RunFilePath): the
// header with its checksum and length zero, then the payload, which it checks against
// the trailers that follow.
func (r *Run) fetch(ctx context.Context, w io.Writer, bake bool) (fetched, error) {
	req := api.RunFileRequest{Bake: bake}
	// A large run takes a while to stream: no deadline, but a stopped recorder is given up on.
	ctx, release, err := r.bound(ctx, http.MethodGet, 0)
	if err != nil {
		return fetched{}, err
	}
	defer release()
	began := time.Now()
	resp, err := r.request(ctx, http.MethodGet, req.Path(), req.Encode())
	if err != nil {
		return fetched{}, r.explain(ctx, began, err)
	}
	defer resp.Body.Close()
	const headerSize = 24
	hdr := make([]byte, headerSize)
	if _, err := io.ReadFull(resp.Body, hdr); err != nil {
		return fetched{}, fmt.Errorf("ask run %s: the answer was cut short: %w", r.ID, err)
	}
	if _, err := w.Write(hdr); err != nil {
		return fetched{}, fmt.Errorf("save run: %w", err)
	}
	sum := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	n, err := io.Copy(io.MultiWriter(taggedWriter{w}, sum), resp.Body)
	if err != nil {
		if werr := (*writeError)(nil); errors.As(err, &werr) {
			return fetched{}, fmt.Errorf("save run: %w", werr.err)
		}
		return fetched{}, r.explain(ctx, began, fmt.Errorf("ask run %s: the answer was cut short after %d bytes: %w", r.ID, n, err))
	}
	f := fetched{header: headerSize}
	wantSum, err1 := strconv.ParseUint(resp.Trailer.Get(api.TrailerChecksum), 10, 32)
	wantSize, err2 := strconv.ParseUint(resp.Trailer.Get(api.TrailerLength), 10, 64)
	if err1 != nil || err2 != nil {
		return fetched{}, fmt.Errorf("ask run %s: the answer was cut short after %d bytes (the recorder failed to write the run)", r.ID, n)
	}
	if wantSize != uint64(n) || uint32(wantSum) != sum.Sum32() {
		return fetched{}, fmt.Errorf("ask run %s: the answer was damaged on its way (%d bytes, checksum %08x; the recorder sent %d, %08x)", r.ID, n, sum.Sum32(), wantSize, wantSum)
	}
	f.sum, f.size = uint32(wantSum), wantSize
	f.kept, _ = strconv.Atoi(resp.Trailer.Get(api.TrailerCodeKept))
	f.failed, _ = strconv.Atoi(resp.Trailer.Get(api.TrailerCodeFailed))
	return f, nil
}

// writeError is an error of the writer a run is fetched into, told apart from the
// answer's.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

type taggedWriter struct{ w io.Writer }

func (t taggedWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}

// sliceAt writes into a byte slice at an offset.
type sliceAt []byte

func (s sliceAt) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(s)) {
		return 0, io.ErrShortWrite
	}
	return copy(s[off:], p), nil
}

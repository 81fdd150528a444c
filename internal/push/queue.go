package push

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/stax-profiler/stax/internal/store"
)

// Request is one encoded window, ready to send.
type Request struct {
	Seq         uint64 `json:"seq"`
	Path        string `json:"path"` // path and query, appended to the target's base URL
	ContentType string `json:"content_type"`
	// ContentEncoding is gzip when Body is compressed.
	ContentEncoding string `json:"content_encoding,omitempty"`
	Body            []byte `json:"-"`
	// LeftOut counts the window's samples the protocol does not take (Pyroscope: those of
	// events other than the first); not queued.
	LeftOut uint64 `json:"-"`
}

// maxRequestBytes bounds a queued request read back from disk.
const maxRequestBytes = 256 << 20

// Queue is a bounded queue of requests on disk, one file each (a JSON header line, then
// the body), named by sequence number so they are sent in order, after a restart too.
// When the queue is full, the oldest request is dropped and counted.
type Queue struct {
	dir string
	max int

	mu      sync.Mutex
	seqs    []uint64 // queued, oldest first
	dropped uint64
	wake    chan struct{}
}

// OpenQueue opens the queue in dir, creating it, with room for max requests; requests
// already there are kept.
func OpenQueue(dir string, max int) (*Queue, error) {
	if max < 1 {
		max = 1
	}
	// Not MkdirAll, which would take a symlink planted at dir for the directory it points
	// to: dir must be a directory of this user that no other can write to.
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create push queue: %w", err)
	}
	if err := store.CheckOwnDir(dir, "push queue"); err != nil {
		return nil, err
	}
	q := &Queue{dir: dir, max: max, wake: make(chan struct{}, 1)}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read push queue: %w", err)
	}
	for _, n := range names {
		if seq, ok := seqOf(n.Name()); ok {
			q.seqs = append(q.seqs, seq)
		}
	}
	slices.Sort(q.seqs)
	return q, nil
}

func (q *Queue) file(seq uint64) string { return filepath.Join(q.dir, fmt.Sprintf("%020d.req", seq)) }

func seqOf(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, ".req")
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(s, 10, 64)
	return seq, err == nil
}

// Last is the newest queued sequence number (0: empty).
func (q *Queue) Last() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.seqs) == 0 {
		return 0
	}
	return q.seqs[len(q.seqs)-1]
}

// Put queues r, dropping the oldest requests while the queue is full.
func (q *Queue) Put(r Request) error {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(r); err != nil {
		return err
	}
	b.Write(r.Body)
	tmp := q.file(r.Seq) + ".tmp"
	os.Remove(tmp) // one a crash left
	if err := writeNew(tmp, b.Bytes()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("queue push request: %w", err)
	}
	if err := os.Rename(tmp, q.file(r.Seq)); err != nil {
		return fmt.Errorf("queue push request: %w", err)
	}
	q.mu.Lock()
	q.seqs = append(q.seqs, r.Seq)
	for len(q.seqs) > q.max {
		os.Remove(q.file(q.seqs[0]))
		q.seqs = q.seqs[1:]
		q.dropped++
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// writeNew creates path, never through a symlink or over a file already there, and
// writes b to it.
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Wake is signalled when a request is queued.
func (q *Queue) Wake() <-chan struct{} { return q.wake }

// Peek reads the oldest request; ok is false when the queue is empty. A request that
// cannot be read is dropped and counted.
func (q *Queue) Peek() (r Request, ok bool) {
	for {
		q.mu.Lock()
		if len(q.seqs) == 0 {
			q.mu.Unlock()
			return Request{}, false
		}
		seq := q.seqs[0]
		q.mu.Unlock()
		r, err := readRequest(q.file(seq))
		if err == nil {
			r.Seq = seq
			return r, true
		}
		q.mu.Lock()
		if len(q.seqs) > 0 && q.seqs[0] == seq {
			os.Remove(q.file(seq))
			q.seqs = q.seqs[1:]
			q.dropped++
		}
		q.mu.Unlock()
	}
}

func readRequest(path string) (Request, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Request{}, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return Request{}, fmt.Errorf("read queued request %s: not a regular file", path)
	}
	br := bufio.NewReader(io.LimitReader(f, maxRequestBytes))
	line, err := br.ReadBytes('\n')
	if err != nil {
		return Request{}, fmt.Errorf("read queued request %s: %w", path, err)
	}
	var r Request
	if err := json.Unmarshal(line, &r); err != nil {
		return Request{}, fmt.Errorf("read queued request %s: %w", path, err)
	}
	if r.Path == "" || !strings.HasPrefix(r.Path, "/") {
		return Request{}, errors.New("read queued request: no path")
	}
	r.Body, err = io.ReadAll(br)
	return r, err
}

// Remove takes request seq out of the queue (it was sent or refused).
func (q *Queue) Remove(seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.seqs, seq); i >= 0 {
		os.Remove(q.file(seq))
		q.seqs = slices.Delete(q.seqs, i, i+1)
	}
}

// Len is how many requests are queued; Dropped how many were dropped.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.seqs)
}

// Dropped is how many requests the bound (or damage) dropped.
func (q *Queue) Dropped() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}

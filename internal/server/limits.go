package server

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits on what clients may hold of a recorder. Clients are the user's own processes
// (the peer uid is checked), but a script that opens connections in a loop, or readers
// that stop reading, must never cost the recorder the file descriptors and memory it
// records with.
const (
	// maxConnsCeiling caps connections even when RLIMIT_NOFILE is large; a quarter of
	// the limit is the cap when it is smaller, so the recorder keeps three quarters of
	// its descriptors for perf events, images and checkpoints.
	maxConnsCeiling = 512
	// idleTimeout closes a keep-alive connection with no request for this long;
	// headerTimeout closes one that starts a request and does not finish its headers.
	idleTimeout   = 30 * time.Second
	headerTimeout = 5 * time.Second
	// maxUnsentBytes bounds the encoded answers waiting for slow readers, all clients
	// together; past it a request is answered 503 at once.
	maxUnsentBytes = 64 << 20
	// maxSnapshots bounds the queries that build a snapshot of the run at once, and
	// maxWaiting those waiting for their turn.
	maxSnapshots = 4
	maxWaiting   = 64
)

// writeTimeout (nanoseconds) drops a client that does not take its answer within this
// time; a variable so tests can shorten it.
var writeTimeout atomic.Int64

func init() { writeTimeout.Store(int64(10 * time.Second)) }

// maxConns is the connection cap for this process.
func maxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 64
	}
	return int(min(uint64(maxConnsCeiling), max(rl.Cur/4, 16)))
}

// connLimiter keeps at most max connections open. At the cap, a new connection replaces
// the one that has waited longest without a request in progress; when every connection
// is busy answering, the new one is told so and closed.
type connLimiter struct {
	max   int
	mu    sync.Mutex
	conns map[net.Conn]connState
}

type connState struct {
	busy  bool // a request is being answered
	since time.Time
}

func newConnLimiter(max int) *connLimiter {
	return &connLimiter{max: max, conns: map[net.Conn]connState{}}
}

// track follows http.Server's ConnState.
func (l *connLimiter) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	case http.StateActive:
		l.conns[c] = connState{busy: true, since: time.Now()}
	default:
		if _, ok := l.conns[c]; ok || st == http.StateNew {
			l.conns[c] = connState{since: time.Now()}
		}
	}
}

// admit decides whether the new connection c may be served, closing an idle one to
// make room if needed.
func (l *connLimiter) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		var oldest net.Conn
		var at time.Time
		for oc, s := range l.conns {
			if !s.busy && (oldest == nil || s.since.Before(at)) {
				oldest, at = oc, s.since
			}
		}
		if oldest == nil {
			return false
		}
		delete(l.conns, oldest)
		oldest.Close()
	}
	l.conns[c] = connState{since: time.Now()}
	return true
}

// open is the number of connections being served.
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

const busyBody = `{"error":"the recorder is answering too many clients; try again shortly"}` + "\n"

var busyReply = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n" +
	"Content-Length: " + strconv.Itoa(len(busyBody)) + "\r\n\r\n" + busyBody

// refuse answers a connection that cannot be served and closes it.
func refuse(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	c.Write([]byte(busyReply))
	c.Close()
}

// unsent counts the bytes of encoded answers not yet taken by their clients.
var unsent atomic.Int64

// writeJSON encodes v in full, then sends it within writeTimeout; answers waiting for
// slow readers are bounded by maxUnsentBytes together.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, `{"error":"encode answer"}`, http.StatusInternalServerError)
		return
	}
	n := int64(buf.Len())
	if unsent.Add(n) > maxUnsentBytes {
		unsent.Add(-n)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"the recorder holds too many unread answers; try again shortly"}` + "\n"))
		return
	}
	defer unsent.Add(-n)
	if t, ok := w.(*turnWriter); ok {
		t.giveBack() // the answer no longer needs the snapshot
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Duration(writeTimeout.Load())))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

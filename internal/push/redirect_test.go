package push

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPushRedirectToAnotherHost: an endpoint on 127.0.0.1 that redirects the push to a
// listener on 127.0.0.2 does not get the profile or the headers sent there: the push
// fails with an error naming the redirect, the window is counted as refused, and the
// other host gets no connection at all. A redirect within the same origin is followed.
func TestPushRedirectToAnotherHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no listener on 127.0.0.2: %v", err)
	}
	var other atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			other.Add(1)
			c.Close()
		}
	}()
	defer ln.Close()
	elsewhere := "http://" + ln.Addr().String()

	var asked, moved atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/moved"):
			moved.Add(1)
		case strings.HasPrefix(r.URL.Path, "/same"):
			asked.Add(1)
			http.Redirect(w, r, "/moved"+r.URL.Path, http.StatusTemporaryRedirect)
		default:
			asked.Add(1)
			http.Redirect(w, r, elsewhere+r.URL.Path, http.StatusTemporaryRedirect)
		}
	}))
	defer srv.Close()
	h := http.Header{"Authorization": {"Bearer sekrit"}}
	req := Request{Seq: 1, Path: "/v1development/profiles", ContentType: "application/x-protobuf", Body: []byte("profile")}

	err = Send(context.Background(), target(t, srv.URL), h, 5*time.Second, req)
	if err == nil || !strings.Contains(err.Error(), "redirected to "+elsewhere+"/v1development/profiles, another host") {
		t.Errorf("push error %v; want one naming the redirect to %s", err, elsewhere)
	}
	if n := other.Load(); n != 0 {
		t.Errorf("the host redirected to got %d connections", n)
	}

	// A sender counts it as refused: the window is dropped, not retried.
	q, err := OpenQueue(t.TempDir()+"/q", 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Put(req); err != nil {
		t.Fatal(err)
	}
	s := NewSender(target(t, srv.URL), h, 5*time.Second, q)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !s.Drain(ctx) {
		t.Fatal("the queue did not empty")
	}
	if c := s.Counts(); c.Pushed != 0 || c.Failed != 1 || c.Refused != 1 || !strings.Contains(c.LastError, "another host") {
		t.Errorf("counts %+v; want 1 failed and refused, naming the redirect", c)
	}
	if n := other.Load(); n != 0 {
		t.Errorf("the host redirected to got %d connections", n)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the endpoint was asked %d times, want 2", n)
	}

	// Within the endpoint's own origin, a redirect is followed.
	if err := Send(context.Background(), target(t, srv.URL+"/same"), h, 5*time.Second, req); err != nil {
		t.Errorf("a redirect to the same host: %v", err)
	}
	if n := moved.Load(); n != 1 {
		t.Errorf("the same-origin redirect reached its target %d times, want 1", n)
	}
}

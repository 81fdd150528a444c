package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/stax-profiler/stax/internal/textesc"
)

// Sender drains a queue to a target: oldest first, each request until the endpoint takes
// it (2xx) or refuses it for good (4xx other than 408 and 429), with exponential backoff
// between failed attempts.
type Sender struct {
	target  Target
	headers map[string][]string
	client  *http.Client
	q       *Queue
	// MinBackoff and MaxBackoff bound the wait after a failed attempt.
	MinBackoff, MaxBackoff time.Duration

	// running is held by Run for its whole life, so that a Run started while a stopped
	// one still finishes its request in flight waits for it instead of sending the same
	// request a second time. It is taken before mu.
	running sync.Mutex
	mu      sync.Mutex
	pushed  uint64
	failed  uint64
	refused uint64
	lastErr string
}

// NewSender sends q's requests to t with headers, each attempt bounded by timeout.
func NewSender(t Target, headers map[string][]string, timeout time.Duration, q *Queue) *Sender {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	c := &http.Client{Timeout: timeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, t.Base) {
			return &redirectError{to: req.URL}
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}}
	return &Sender{target: t, headers: headers, q: q, client: c,
		MinBackoff: 250 * time.Millisecond, MaxBackoff: 30 * time.Second}
}

// redirectError is a redirect to another origin than the target's: the profile and the
// headers (credentials, often) would go to a host the user did not name, so it is not
// followed.
type redirectError struct{ to *url.URL }

func (e *redirectError) Error() string {
	u := *e.to
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return fmt.Sprintf("redirected to %s, another host than the push URL's: not followed (push to the URL it redirects to, if it is meant)", u.String())
}

// sameOrigin reports whether u has the scheme, host and port of base.
func sameOrigin(u, base *url.URL) bool {
	return strings.EqualFold(u.Scheme, base.Scheme) && strings.EqualFold(u.Hostname(), base.Hostname()) &&
		portOf(u) == portOf(base)
}

// portOf is u's port, the scheme's default when it has none.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// Counts are what a sender did so far.
type Counts struct {
	Pushed, Failed, Refused uint64
	LastError               string
}

// Counts returns the sender's counts.
func (s *Sender) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Counts{s.pushed, s.failed, s.refused, s.lastErr}
}

// Run sends until ctx ends. Runs of one sender take turns: one starts when the one before
// it has returned.
func (s *Sender) Run(ctx context.Context) {
	s.running.Lock()
	defer s.running.Unlock()
	backoff := time.Duration(0)
	for {
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		r, ok := s.q.Peek()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-s.q.Wake():
			}
			continue
		}
		retry, err := s.sendLetFinish(ctx, r)
		if ctx.Err() != nil && err != nil {
			return // the request may be sent again: it stays queued
		}
		s.mu.Lock()
		switch {
		case err == nil:
			s.pushed++
		case retry:
			s.failed++
		default:
			s.failed++
			s.refused++
		}
		if err != nil {
			s.lastErr = oneLine(err.Error())
		}
		s.mu.Unlock()
		if err == nil || !retry {
			s.q.Remove(r.Seq)
			backoff = 0
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		backoff = min(max(backoff*2, s.MinBackoff), s.MaxBackoff)
	}
}

// stopGrace is how long a request in flight when the sender is stopped may still take.
const stopGrace = 2 * time.Second

// sendLetFinish sends r, letting a request in flight when ctx ends finish for up to
// stopGrace: aborted after the endpoint got it, it would stay queued and be sent again, and
// the endpoint would count its window twice.
func (s *Sender) sendLetFinish(ctx context.Context, r Request) (retry bool, err error) {
	sendCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(stopGrace, abort) })
	defer stop()
	return s.send(sendCtx, r)
}

// Drain sends what is queued until the queue is empty or ctx ends; it says whether the
// queue emptied.
func (s *Sender) Drain(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.q.Len() > 0 {
		select {
		case <-ctx.Done():
			cancel()
			<-done
			return s.q.Len() == 0
		case <-tick.C:
		}
	}
	cancel()
	<-done
	return true
}

// send makes one attempt; retry says whether a failure may succeed later.
func (s *Sender) send(ctx context.Context, r Request) (retry bool, err error) {
	u := s.target.Base.String() + r.Path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(r.Body))
	if err != nil {
		return false, fmt.Errorf("push window %d: %w", r.Seq, err)
	}
	for k, vs := range s.headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", r.ContentType)
	if r.ContentEncoding != "" {
		req.Header.Set("Content-Encoding", r.ContentEncoding)
	}
	req.Header.Set("User-Agent", "stax")
	if s.target.Base.User != nil && req.Header.Get("Authorization") == "" {
		pw, _ := s.target.Base.User.Password()
		req.SetBasicAuth(s.target.Base.User.Username(), pw)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// A redirect elsewhere would be refused again: the window is refused, not retried.
		var re *redirectError
		return !errors.As(err, &re), fmt.Errorf("push window %d to %s: %w", r.Seq, s.target, unwrapURL(err))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	err = fmt.Errorf("push window %d to %s: %s: %s", r.Seq, s.target, resp.Status, strings.TrimSpace(string(msg)))
	retry = resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests
	return retry, err
}

// unwrapURL drops url.Error's repetition of the method and URL.
func unwrapURL(err error) error {
	type unwrapper interface{ Unwrap() error }
	if u, ok := err.(unwrapper); ok && strings.HasPrefix(err.Error(), "Post ") {
		return u.Unwrap()
	}
	return err
}

// oneLine makes an error fit one line of status.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return textesc.Escape(s)
}

// Send makes one attempt to send r to t, as stax push does for a stored run.
func Send(ctx context.Context, t Target, headers map[string][]string, timeout time.Duration, r Request) error {
	_, err := NewSender(t, headers, timeout, nil).send(ctx, r)
	return err
}

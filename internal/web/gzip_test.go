package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Answers are gzip-compressed when the client takes it, and decode to the plain answer;
// error answers, the icon's foreign host refusal and the event stream are not.
func TestGzipAnswers(t *testing.T) {
	s := serve(t, smallRun(), "")
	base, token, _ := strings.Cut(s.URL(), "/?token=")
	get := func(path, enc string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("X-Stax-Token", token)
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		// The transport would decode gzip itself when it asked for it; here the test asks.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b []byte
		if strings.HasPrefix(path, "/api/events") {
			b = make([]byte, 64)
			n, _ := resp.Body.Read(b)
			b = b[:n]
		} else {
			b, _ = io.ReadAll(resp.Body)
		}
		return resp, b
	}
	for _, path := range []string{"/", "/app.js", "/app.css", "/api/flame", "/api/top", "/favicon.ico"} {
		plainResp, plain := get(path, "")
		if plainResp.Header.Get("Content-Encoding") != "" {
			t.Errorf("%s without Accept-Encoding: Content-Encoding %q", path, plainResp.Header.Get("Content-Encoding"))
		}
		resp, body := get(path, "gzip, deflate, br")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("%s: status %d, Content-Encoding %q", path, resp.StatusCode, resp.Header.Get("Content-Encoding"))
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%s: decoded %d bytes (err %v), plain %d", path, len(got), err, len(plain))
		}
		if path == "/api/flame" && len(body)*3 > len(plain) {
			t.Errorf("%s: %d bytes compressed of %d", path, len(body), len(plain))
		}
	}
	if resp, _ := get("/api/annotate", "gzip"); resp.StatusCode != 400 || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("an error answer: status %d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	if resp, b := get("/api/events", "gzip"); resp.Header.Get("Content-Encoding") != "" || !bytes.HasPrefix(b, []byte("event: status")) {
		t.Errorf("the event stream: Content-Encoding %q, begins %q", resp.Header.Get("Content-Encoding"), b)
	}
	if resp, _ := get("/api/flame", "gzip;q=0"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 answered with Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
}

// The icon needs no token (browsers ask for it without), but still a Host of this machine.
func TestFaviconWithoutToken(t *testing.T) {
	s := serve(t, smallRun(), "")
	base, _, _ := strings.Cut(s.URL(), "/?token=")
	for _, c := range []struct {
		path, host string
		want       int
	}{{"/favicon.ico", "", 200}, {"/favicon.svg", "", 200}, {"/favicon.ico", "evil.example", 403}, {"/app.js", "", 403}} {
		req, _ := http.NewRequest("GET", base+c.path, nil)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s (host %q): %d, want %d", c.path, c.host, resp.StatusCode, c.want)
		}
	}
}

// FuzzAcceptsGzip: any Accept-Encoding header is read without a panic, and a header
// naming gzip alone is taken.
func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip, deflate, br", "br;q=1.0, gzip;q=0.8, *;q=0.1", "gzip;q=0", "identity", "", ",,;;", "GZIP ; q=0.000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		acceptsGzip(h)
		if !strings.ContainsAny(h, ",;") && strings.EqualFold(strings.TrimSpace(h), "gzip") && !acceptsGzip(h) {
			t.Errorf("%q is not taken", h)
		}
	})
}

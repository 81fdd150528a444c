package push

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Protocol is how a target takes profiles.
type Protocol string

const (
	OTLP      Protocol = "otlp"      // OTLP/HTTP protobuf at /v1development/profiles
	Pyroscope Protocol = "pyroscope" // Pyroscope's /ingest?format=pprof
)

// Target is where profiles go.
type Target struct {
	Protocol Protocol
	Base     *url.URL // http or https, without the protocol prefix
}

// ParseTarget reads otlp+http(s)://HOST:PORT[/PATH] or pyroscope+http(s)://HOST:PORT[/PATH].
func ParseTarget(s string) (Target, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Target{}, fmt.Errorf("read push URL %q: %w", s, err)
	}
	proto, scheme, ok := strings.Cut(u.Scheme, "+")
	if !ok || (Protocol(proto) != OTLP && Protocol(proto) != Pyroscope) || (scheme != "http" && scheme != "https") {
		return Target{}, fmt.Errorf("push URL %q: want otlp+http://, otlp+https://, pyroscope+http:// or pyroscope+https://", s)
	}
	if u.Host == "" {
		return Target{}, fmt.Errorf("push URL %q has no host: write it as %s://HOST:PORT", s, u.Scheme)
	}
	base := *u
	base.Scheme = scheme
	base.Path = strings.TrimSuffix(base.Path, "/")
	base.RawQuery, base.Fragment = "", ""
	return Target{Protocol: Protocol(proto), Base: &base}, nil
}

// String is the target as the user wrote it, without credentials.
func (t Target) String() string {
	u := *t.Base
	u.User = nil
	u.Scheme = string(t.Protocol) + "+" + u.Scheme
	return u.String()
}

// ParseHeaders reads K=V pairs (--push-header) into a header set.
func ParseHeaders(kvs []string) (http.Header, error) {
	h := http.Header{}
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || !validName(k) || !validValue(v) {
			// Nothing of it is quoted: it holds a credential, often.
			return nil, fmt.Errorf("push header %d: want NAME=VALUE, e.g. X-Scope-OrgID=team (or @FILE of Name: value lines)", i+1)
		}
		h.Add(k, strings.TrimSpace(v))
	}
	return h, nil
}

// MaxHeaderText bounds the text ParseHeaderLines reads (a headers file).
const MaxHeaderText = 64 << 10

// ParseHeaderLines reads headers written one a line as curl takes them from a file,
// "Name: value", into h: blank lines and lines starting with # are skipped, and a line
// may end in CRLF. from names the text's source in errors, which give the line number
// and the header's name but never a value (a credential, often).
func ParseHeaderLines(h http.Header, text, from string) error {
	if len(text) > MaxHeaderText {
		return fmt.Errorf("push headers in %s: more than %d bytes", from, MaxHeaderText)
	}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		if !ok || !validName(k) || !validValue(v) {
			return fmt.Errorf("push headers in %s, line %d: want Name: value, e.g. Authorization: Bearer TOKEN", from, i+1)
		}
		h.Add(k, strings.TrimSpace(v))
	}
	return nil
}

// validName reports whether k is an HTTP header name (an RFC 9110 token).
func validName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validValue reports whether v can be a header's value: no control character but tab.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

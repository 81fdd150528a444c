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
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(v, "\r\n") {
			return nil, fmt.Errorf("push header %q: want NAME=VALUE, e.g. Authorization=Bearer TOKEN", kv)
		}
		h.Add(k, strings.TrimSpace(v))
	}
	return h, nil
}

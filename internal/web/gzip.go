package web

import (
	"compress/gzip"
	"net/http"
	"strings"
	"sync"
)

// serveGzipped serves r with h, compressed where the browser takes it.
func serveGzipped(h http.Handler, w http.ResponseWriter, r *http.Request) {
	gw := gzipped(w, r)
	h.ServeHTTP(gw, r)
	if g, ok := gw.(*gzipWriter); ok {
		g.finish()
	}
}

// gzipped compresses what w answers r when the browser takes gzip: the flame graph of a
// large run is JSON of a few hundred kilobytes, a tenth of that compressed. The event
// stream is left as it is (each event must reach the page when it is written).
func gzipped(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if r.URL.Path == "/api/events" || r.Method == http.MethodHead || !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		return w
	}
	w.Header().Add("Vary", "Accept-Encoding")
	return &gzipWriter{ResponseWriter: w}
}

// acceptsGzip reads an Accept-Encoding header: gzip is taken unless its q is 0.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

var gzipPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }}

// gzipWriter compresses the body; finish ends it.
type gzipWriter struct {
	http.ResponseWriter
	gz      *gzip.Writer
	started bool
	plain   bool // an error status or an empty answer: sent as it is
}

func (g *gzipWriter) WriteHeader(code int) {
	if g.started {
		return
	}
	g.started = true
	h := g.Header()
	if code >= 300 || code == http.StatusNoContent || h.Get("Content-Encoding") != "" {
		g.plain = true
	} else {
		h.Set("Content-Encoding", "gzip")
		h.Del("Content-Length")
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *gzipWriter) Write(b []byte) (int, error) {
	if !g.started {
		g.WriteHeader(http.StatusOK)
	}
	if g.plain {
		return g.ResponseWriter.Write(b)
	}
	if g.gz == nil {
		g.gz = gzipPool.Get().(*gzip.Writer)
		g.gz.Reset(g.ResponseWriter)
	}
	return g.gz.Write(b)
}

// finish ends the compressed body, if one was begun.
func (g *gzipWriter) finish() {
	if g.gz != nil {
		g.gz.Close()
		gzipPool.Put(g.gz)
		g.gz = nil
	}
}

package server

import (
	"net/http"
	"strconv"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
)

// Marker is a recording that takes markers (stax mark): a live recorder.
type Marker interface {
	Mark(name string, at uint64) uint64
}

// addMark drops a marker into the live run: name, and at, the CLOCK_MONOTONIC time the
// command ran (optional).
func (s *Server) addMark(w http.ResponseWriter, r *http.Request) {
	m, ok := s.rec.(Marker)
	if !ok || !s.live {
		writeJSON(w, http.StatusConflict, api.Error{Error: "run " + s.rec.ID() + " is not recording: markers go into a live run"})
		return
	}
	q := r.URL.Query()
	name := q.Get("name")
	if name == "" {
		badRequest(w, "parameter name: empty (a marker needs a name)")
		return
	}
	var at uint64
	if v := q.Get("at"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			badRequest(w, "parameter at: %q is not a time in nanoseconds", v)
			return
		}
		at = n
	}
	name = spans.CutName(name)
	at = m.Mark(name, at)
	writeJSON(w, http.StatusOK, api.Mark{Schema: api.Schema, Run: s.rec.ID(), Name: name, TimeNs: at})
}

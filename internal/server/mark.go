package server

import (
	"net/http"

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
	var req api.MarkRequest
	if err := decode(r, &req); err != nil {
		badRequest(w, "%v", err)
		return
	}
	name := spans.CutName(req.Name)
	at := m.Mark(name, req.At)
	writeJSON(w, http.StatusOK, api.Mark{Schema: api.Schema, Run: s.rec.ID(), Name: name, TimeNs: at})
}

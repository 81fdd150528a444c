package server

import (
	"net/http"

	"github.com/stax-profiler/stax/internal/query"
)

func (s *Server) spans(w http.ResponseWriter, r *http.Request) {
	n, err := intParam(r, "n", 0)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	res, err := query.Spans(s.rec.Snapshot(), query.SpansOptions{By: r.URL.Query().Get("by"), N: n})
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	s.mark(&res.Live, &res.State)
	writeJSON(w, http.StatusOK, res)
}

package query

import (
	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
)

// The answers' rows are api's wire types, converted from agg's model here, field by
// field: the model may change without changing the JSON stax documents.

// topRows is top's rows as its answer holds them (never nil: "rows": []).
func topRows(rows []agg.TopRow) []api.TopRow {
	out := make([]api.TopRow, len(rows))
	for i, r := range rows {
		out[i] = api.TopRow{Func: r.Func, Image: r.Image, Kind: r.Kind, Inlined: r.Inlined, File: r.File, Line: r.Line, Addr: r.Addr,
			Self: r.Self, Total: r.Total, SelfPct: r.SelfPct, TotalPct: r.TotalPct, Reason: r.Reason}
	}
	return out
}

// processRows is top --by process's rows as its answer holds them (nil: none).
func processRows(rows []agg.ProcessRow) []api.ProcessRow {
	if rows == nil {
		return nil
	}
	out := make([]api.ProcessRow, len(rows))
	for i, r := range rows {
		out[i] = api.ProcessRow{Pid: r.Pid, Comm: r.Comm, Threads: r.Threads, Samples: r.Samples, Pct: r.Pct, TopFunc: r.TopFunc}
	}
	return out
}

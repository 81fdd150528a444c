package web

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil/synthrun"
)

func TestTmpServerTimes(t *testing.T) {
	if os.Getenv("STAX_WEB_BENCH") == "" {
		t.Skip()
	}
	p := synthrun.Tree(60, 4999)
	run := &store.Run{Meta: store.Meta{ID: "big-tree", Samples: p.TotalSamples(), Finished: true, StartNs: 1e9, Freq: 4999}, Profile: *p}
	s := serve(t, run, "")
	for _, c := range []struct{ path, q string }{
		{"/v1/flame", "threshold_pct=0.1"},
		{"/v1/flame", "threshold_pct=0.1"},
		{"/v1/top", "n=100"},
		{"/v1/timeline", "threads=16&buckets=200"},
		{"/v1/threads", "n=200"},
		{"/v1/stack_chart", "width=1100&from=0&to=60"},
		{"/v1/stack_chart", "width=1100&from=10&to=11"},
		{"/v1/flame", "threshold_pct=0.04&under=func_0&under=func_1"},
		{"/v1/flame", "threshold_pct=0.04&callers_of=^func_1$"},
		{"/v1/status", ""},
	} {
		q, _ := url.ParseQuery(c.q)
		t0 := time.Now()
		b, code := s.src.Get(context.Background(), c.path, q)
		t.Logf("%s?%s: %d, %d bytes, %v", c.path, c.q, code, len(b), time.Since(t0))
	}
}

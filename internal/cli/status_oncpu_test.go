package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// The kernel's count of the run time past what was read says records were lost only where
// some were: without, it is run time passed to two threads' events and read once.
func TestOnCPUStatusClaimsLossOnlyWithLoss(t *testing.T) {
	o := &api.OffCPUMeta{OnCPUClock: store.OnCPUScheduler, OnCPU: []api.ThreadNs{{Tid: 1, Ns: 2_000_000_000}}, OnCPUCounted: 2_120_000_000}
	for _, c := range []struct {
		lost uint64
		want bool
	}{{0, false}, {5, true}} {
		var b bytes.Buffer
		onCPUStatus(&b, o, c.lost)
		if got := strings.Contains(b.String(), "records lost"); got != c.want {
			t.Errorf("%d records lost: %q", c.lost, b.String())
		}
		if !strings.HasPrefix(b.String(), "on-cpu:    2000.0 ms, the scheduler's run time") {
			t.Errorf("%d records lost: %q", c.lost, b.String())
		}
	}
}

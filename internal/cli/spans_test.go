package cli

import (
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/spans"
)

func TestSpanSourceLine(t *testing.T) {
	for _, c := range []struct {
		src  api.SpanSource
		want string
	}{
		{api.SpanSource{Kind: spans.KindITT, Pid: 7, Path: "/tmp/itt-7.spans", Received: 12345, Dropped: 2},
			"spans:     pid 7 itt /tmp/itt-7.spans: 12,345 received, 2 dropped"},
		{api.SpanSource{Kind: spans.KindMarkerFile, Pid: 7, Path: "/x/marker-7.txt", Received: 3, Bad: 1, Error: "gone"},
			"spans:     pid 7 marker_file /x/marker-7.txt: 3 received, 0 dropped, 1 unreadable (gone)"},
		{api.SpanSource{Kind: spans.KindMark, Received: 1}, "spans:     stax mark: 1 received, 0 dropped"},
		{api.SpanSource{Kind: spans.KindITT, Pid: 7, Path: "/tmp/itt-7.spans", Received: 4, Unfinished: 3, Unmatched: 2},
			"spans:     pid 7 itt /tmp/itt-7.spans: 4 received, 0 dropped, 3 still open when their thread or the process ended, 2 task ends without a begin"},
	} {
		if got := spanSourceLine(c.src); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
	for ns, want := range map[uint64]string{0: "0", 999: "999 ns", 1500: "1.50 µs", 2.5e6: "2.50 ms", 3.25e9: "3.250 s"} {
		if got := spanDuration(ns); got != want {
			t.Errorf("spanDuration(%d) = %q, want %q", ns, got, want)
		}
	}
}

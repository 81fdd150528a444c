package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/stax-profiler/stax/internal/api"
)

// spanLetters mark the buckets of the spans on the timeline's lanes, one per span name
// in order of first appearance; the legend below the timeline names them.
const spanLetters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// spanLegend assigns each span name of res a letter (names past the letters share '*').
func spanLegend(res api.Timeline) (map[string]byte, []string) {
	letters := map[string]byte{}
	var order []string
	for _, s := range res.Spans {
		if _, ok := letters[s.Name]; ok {
			continue
		}
		c := byte('*')
		if len(order) < len(spanLetters) {
			c = spanLetters[len(order)]
		}
		letters[s.Name] = c
		order = append(order, s.Name)
	}
	return letters, order
}

// bucketOf returns the bucket holding sec, clamped to the timeline.
func bucketOf(res api.Timeline, sec float64) int {
	if res.BucketSec <= 0 {
		return 0
	}
	return min(max(int((sec-res.StartSec)/res.BucketSec), 0), max(res.Buckets-1, 0))
}

// printLanes draws the spans of thread tid, one row per lane: each bucket a span covers
// holds its name's letter.
func printLanes(w io.Writer, res api.Timeline, tid uint32, letters map[string]byte) {
	var rows [][]byte
	for _, s := range res.Spans {
		if s.Tid != tid {
			continue
		}
		for len(rows) <= s.Lane {
			rows = append(rows, []byte(strings.Repeat(" ", res.Buckets)))
		}
		lo, hi := bucketOf(res, s.StartSec), bucketOf(res, s.EndSec)
		if s.EndSec < res.StartSec+float64(hi)*res.BucketSec+res.BucketSec/2 && hi > lo {
			hi-- // ends early in its last bucket: leave that to what follows
		}
		for b := lo; b <= hi && b < len(rows[s.Lane]); b++ {
			rows[s.Lane][b] = letters[s.Name]
		}
	}
	for i, r := range rows {
		label := ""
		if i == 0 {
			label = "spans"
		}
		fmt.Fprintf(w, "%8s %-16s %10s  |%s|\n", "", label, "", r)
	}
}

// printSpanThreads draws the lanes of the threads that have spans but no row of samples,
// the markers' ticks, and the legend.
func printSpanThreads(w io.Writer, res api.Timeline, letters map[string]byte, order []string) {
	shown := map[uint32]bool{}
	for _, th := range res.Threads {
		shown[th.Tid] = true
	}
	var others []uint32
	for _, s := range res.Spans {
		if !shown[s.Tid] {
			shown[s.Tid] = true
			others = append(others, s.Tid)
		}
	}
	slices.Sort(others)
	for _, tid := range others {
		fmt.Fprintf(w, "%8d %-16s %10s  |%s|\n", tid, "", "0", strings.Repeat(" ", res.Buckets))
		printLanes(w, res, tid, letters)
	}
	if len(res.Markers) > 0 {
		row := []byte(strings.Repeat(" ", res.Buckets))
		for _, m := range res.Markers {
			if b := bucketOf(res, m.AtSec); b < len(row) {
				row[b] = '^'
			}
		}
		fmt.Fprintf(w, "%8s %-16s %10d  |%s|\n", "", "markers", len(res.Markers), row)
	}
	if len(order) > 0 {
		parts := make([]string, len(order))
		for i, name := range order {
			parts[i] = fmt.Sprintf("%c %s", letters[name], esc(name))
		}
		fmt.Fprintf(w, "\nSPANS  %s\n", strings.Join(parts, " · "))
	}
	if len(res.Markers) > 0 {
		fmt.Fprintf(w, "MARKERS\n")
		for i, m := range res.Markers {
			if i == 20 {
				fmt.Fprintf(w, "  and %d more (--json lists them all)\n", len(res.Markers)-i)
				break
			}
			thread := "stax mark"
			if m.Tid != 0 {
				thread = fmt.Sprintf("tid %d", m.Tid)
			}
			fmt.Fprintf(w, "  %8.3fs  %s  (%s)\n", m.AtSec, esc(m.Name), thread)
		}
	}
	if res.SpansError != "" {
		fmt.Fprintf(w, "note: no spans shown: %s\n", esc(res.SpansError))
	}
	if res.Omitted > 0 {
		fmt.Fprintf(w, "note: %d more spans and markers in this window are not shown: take a smaller window (--from/--to)\n", res.Omitted)
	}
}

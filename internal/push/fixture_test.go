package push

import (
	"encoding/binary"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

const fixtureStart = 7_000_000_000 // monotonic ns

// fixture is a run of two threads over two seconds: jit_a (JIT code, called from main)
// has 100 samples on thread "worker-1", jit_b 200 on "worker-2", spread evenly in time.
func fixture() *store.Run {
	frames := []agg.Frame{
		{Func: "main", Image: "/opt/app/bin/app", Kind: agg.KindUser, File: "app.c", Line: 10},
		{Func: "jit_a", Image: "[jit]", Kind: agg.KindJIT},
		{Func: "jit_b", Image: "[jit]", Kind: agg.KindJIT},
	}
	p := agg.Profile{Frames: frames, Stacks: [][]uint32{{1, 0}, {2, 0}},
		Entries: []agg.Entry{
			{Tid: 11, Pid: 10, Stack: 0, Count: 100, Leaf: 0x7f0000001000, LeafFunc: 1},
			{Tid: 12, Pid: 10, Stack: 1, Count: 200, Leaf: 0x7f0000002000, LeafFunc: 2},
		},
		Threads:  []agg.ThreadInfo{{Tid: 11, Pid: 10, Name: "worker-1"}, {Tid: 12, Pid: 10, Name: "worker-2"}},
		KeyEntry: []int32{0, 1},
	}
	p.LocateFrameStacks()
	// 300 samples, 2 s: every third one is jit_a's.
	c := agg.SeriesChunk{Base: fixtureStart, Min: fixtureStart}
	last := uint64(fixtureStart)
	for i := range 300 {
		t := uint64(fixtureStart + i*2_000_000_000/300)
		key := uint64(1)
		if i%3 == 0 {
			key = 0
		}
		c.Data = binary.AppendVarint(c.Data, int64(t-last))
		c.Data = binary.AppendUvarint(c.Data, key)
		c.Data = binary.AppendUvarint(c.Data, 0)
		c.N++
		c.Max, last = t, t
		if p.Entries[key].Time == 0 {
			p.Entries[key].Time = t
		}
	}
	p.Series.Chunks = []agg.SeriesChunk{c}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return &store.Run{
		Meta: store.Meta{ID: "app-1", Command: []string{"/opt/app/bin/app"}, Pid: 10, Freq: 150, Event: "cpu-clock",
			Start: start, StartNs: fixtureStart, Samples: 300},
		Profile: p,
	}
}

func storeCode(path, buildID string) store.Code {
	return store.Code{Path: path, BuildID: buildID}
}

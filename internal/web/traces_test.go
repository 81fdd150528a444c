package web

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/query"
	"github.com/stax-profiler/stax/internal/server"
	"github.com/stax-profiler/stax/internal/store"
)

// tracedWork is work of event number event; raw, when set, is the raw data of its i-th
// sample: the run keeps it with the sample (a tracepoint's fields).
type tracedWork struct {
	work
	event uint32
	raw   func(i int) []byte
}

// mixedFormat is a made-up tracepoint's format with a field of each kind the page shows
// apart: a string, a list, an integer beyond 2^53 and a pointer.
const mixedFormat = `name: mixed
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char name[8];	offset:8;	size:8;	signed:0;
	field:u32 vals[3];	offset:16;	size:12;	signed:0;
	field:u64 big;	offset:32;	size:8;	signed:0;
	field:void * ptr;	offset:40;	size:8;	signed:0;
`

// writeRaw is sys_enter_write's raw data for a write of count bytes from buf to fd.
func writeData(fd, buf, count uint64) []byte {
	raw := make([]byte, 40)
	binary.LittleEndian.PutUint32(raw[8:], 1) // __syscall_nr
	binary.LittleEndian.PutUint64(raw[16:], fd)
	binary.LittleEndian.PutUint64(raw[24:], buf)
	binary.LittleEndian.PutUint64(raw[32:], count)
	return raw
}

// The values of mixedRaw's fields.
const (
	mixedBig = uint64(1)<<60 + 7
	mixedPtr = uint64(0xffff_8880_1234_5678)
)

func mixedRaw(int) []byte {
	raw := make([]byte, 48)
	copy(raw[8:], "kworker")
	for j, v := range []uint32{1, 22, 333} {
		binary.LittleEndian.PutUint32(raw[16+4*j:], v)
	}
	binary.LittleEndian.PutUint64(raw[32:], mixedBig)
	binary.LittleEndian.PutUint64(raw[40:], mixedPtr)
	return raw
}

// tracedRun is countedRun of work whose samples may keep raw data, of the events named,
// each with its format where it is a tracepoint.
func tracedRun(t testing.TB, id string, events []store.Event, formats map[uint32][]byte, ws ...tracedWork) *store.Run {
	t.Helper()
	r := agg.NewRun()
	for _, ev := range slices.Sorted(maps.Keys(formats)) {
		r.KeepTraces(ev, agg.DefaultTraceSamples)
	}
	var nm names
	index := map[string]uint64{}
	addr := func(fn string) uint64 {
		if a, ok := index[fn]; ok {
			return a
		}
		a := uint64(len(nm.funcs)) << 8
		nm.funcs = append(nm.funcs, agg.Frame{Func: fn, Image: "/usr/bin/prog", Kind: agg.KindUser})
		index[fn] = a
		return a
	}
	at := uint64(1e9)
	total := 0
	for _, w := range ws {
		chain := []uint64{^uint64(511)} // PERF_CONTEXT_USER
		for i := len(w.stack) - 1; i >= 0; i-- {
			chain = append(chain, addr(w.stack[i]))
		}
		for i := range w.n {
			if w.raw != nil {
				r.AddTracedSample(w.event, 100, w.tid, 0, at, 0, chain, nil, w.raw(i))
			} else {
				r.AddCountedSample(w.event, 100, w.tid, 0, at, 0, chain, nil)
			}
			at += 1e6
			total++
		}
	}
	r.Resolve(nm)
	p := r.Profile([]agg.ThreadInfo{{Tid: 100, Pid: 100, Name: "prog"}, {Tid: 101, Pid: 100, Name: "alpha"}, {Tid: 102, Pid: 100, Name: "beta"}})
	run := &store.Run{Meta: store.Meta{ID: id, Samples: uint64(total), Finished: true, StartNs: 1e9, Event: events[0].Name, Events: events}, Profile: *p}
	for _, ring := range r.Traces() {
		run.Traces = append(run.Traces, store.TraceEvent{Event: ring.Event, Format: formats[ring.Event], Cap: ring.Cap, Dropped: ring.Dropped, Samples: ring.Samples})
	}
	return run
}

const (
	writeEvent = "syscalls:sys_enter_write"
	bigBuf     = uint64(0x7ffd_1234_5678)
)

// writesRun sampled cpu-clock (spin, 100 samples from 0 s), syscalls:sys_enter_write and
// a made-up tracepoint, test:mixed. Thread alpha's big_writes writes 3,000 bytes to fd 3
// 30 times (from 0.1 s, a millisecond apart), then thread beta's small_writes 1,000 bytes
// to fd 4 30 times (from 0.13 s): as many samples, a third of the bytes.
func writesRun(t testing.TB) *store.Run {
	format, err := os.ReadFile(filepath.Join("..", "tracefmt", "testdata", "formats", "sys_enter_write.format"))
	if err != nil {
		t.Fatal(err)
	}
	events := []store.Event{
		{Name: "cpu-clock", Freq: 999, Samples: 100, Count: 100 * 1_001_001},
		{Name: writeEvent, Period: 1, Samples: 60, Count: 60},
		{Name: "test:mixed", Period: 1, Samples: 3, Count: 3},
	}
	return tracedRun(t, "writes", events, map[uint32][]byte{1: format, 2: []byte(mixedFormat)},
		tracedWork{work: work{101, []string{"main", "spin"}, 100}},
		tracedWork{work: work{101, []string{"main", "big_writes"}, 30}, event: 1, raw: func(int) []byte { return writeData(3, bigBuf, 3000) }},
		tracedWork{work: work{102, []string{"main", "small_writes"}, 30}, event: 1, raw: func(int) []byte { return writeData(4, 0x1000, 1000) }},
		tracedWork{work: work{101, []string{"main", "mixed"}, 3}, event: 2, raw: mixedRaw},
	)
}

// /api/samples answers the page's samples with their times in seconds from the run's
// start, and integers a JavaScript number would round as strings of their digits.
func TestSamplesAnswerExact(t *testing.T) {
	s := serve(t, writesRun(t), "")
	base, token, _ := strings.Cut(s.URL(), "/?token=")
	get := func(q string) (int, string) {
		resp, err := http.Get(base + "/api/samples?token=" + token + "&" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("event=test:mixed&n=1")
	want := fmt.Sprintf(`"fields":{"name":"kworker","vals":[1,22,333],"big":"%d","ptr":"%d"},"t":0.162`, mixedBig, mixedPtr)
	if code != http.StatusOK || !strings.Contains(body, want) || !strings.Contains(body, `"matched":3`) {
		t.Errorf("mixed: %d %s\nwant %s", code, body, want)
	}
	code, body = get("event=" + writeEvent + "&tid=102&n=2")
	if code != http.StatusOK || !strings.Contains(body, `"matched":30`) || strings.Count(body, `"count":1000`) != 2 || !strings.Contains(body, `"buf":4096`) {
		t.Errorf("beta's writes: %d %s", code, body)
	}
	// An event that keeps no fields is the API's error.
	if code, body := get("event=cpu-clock"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "keeps no fields") {
		t.Errorf("cpu-clock: %d %s", code, body)
	}
}

// A diff weighed by a field weighs the base by it too: two windows of the run, alpha's
// writes against beta's, change big_writes by the share of bytes.
func TestDiffWeighsTheBase(t *testing.T) {
	run := writesRun(t)
	s, err := Listen(HandlerSource{server.Handler(server.Stored(run), false), true}, Options{Base: &Base{Run: run, Same: true, Window: query.Window{From: "0.13", To: "0.16"}}})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(s.Close)
	base, token, _ := strings.Cut(s.URL(), "/?token=")
	resp, err := http.Get(base + "/api/changes?token=" + token + "&event=" + writeEvent + "&weight=count&from=0.1&to=0.13")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Samples     uint64   `json:"samples"`
		BaseSamples uint64   `json:"base_samples"`
		Rows        []Change `json:"rows"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if c.Samples != 90_000 || c.BaseSamples != 30_000 {
		t.Errorf("the sides weigh %d and %d bytes, want 90,000 and 30,000", c.Samples, c.BaseSamples)
	}
	for _, r := range c.Rows {
		if want := map[string]float64{"big_writes": 100, "small_writes": -100}[r.Func]; r.DeltaPct != want {
			t.Errorf("%s changed %.2f points, want %.0f", r.Func, r.DeltaPct, want)
		}
	}
}

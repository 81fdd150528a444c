package recorder

import (
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/replay"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

var update = flag.Bool("update", false, "record testdata/burn.cap again (needs perf_event_open)")

const capture = "testdata/burn.cap"

// TestMakeCapture records this test binary burning 200 ms of CPU time with STAX_CAPTURE
// set, when run with -update: the capture the replay tests play back.
func TestMakeCapture(t *testing.T) {
	if !*update {
		t.Skip("run with -update to record the capture again")
	}
	testutil.RequirePerf(t)
	t.Setenv("STAX_HOME", t.TempDir())
	path, _ := filepath.Abs(capture)
	os.Remove(path) // a capture is never written over
	t.Setenv("STAX_CAPTURE", path)
	r, err := Start(Options{Argv: []string{os.Args[0]}, Freq: 999, Env: append(os.Environ(), "STAX_TEST_BURN=200ms")})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

// lostRecord builds a PERF_RECORD_LOST of n samples for tid, with sample_id_all fields
// (pid, tid, time, cpu) as perfevent asks for.
func lostRecord(tid uint32, n uint64) []byte {
	b := make([]byte, 8, 48)
	binary.LittleEndian.PutUint32(b[0:], perfrecord.TypeLost)
	binary.LittleEndian.PutUint16(b[6:], 48)
	b = binary.LittleEndian.AppendUint64(b, 1) // id
	b = binary.LittleEndian.AppendUint64(b, n)
	b = binary.LittleEndian.AppendUint32(b, tid) // pid
	b = binary.LittleEndian.AppendUint32(b, tid) // tid
	b = binary.LittleEndian.AppendUint64(b, 1)   // time
	b = binary.LittleEndian.AppendUint32(b, 1)   // cpu
	b = binary.LittleEndian.AppendUint32(b, 0)
	return b
}

// TestReplayCountsEverySample plays a captured recording back without a kernel: every
// sample in it is counted, threads and processes are followed, lost and damaged records
// are counted apart, and the run is stored finished.
func TestReplayCountsEverySample(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	f, err := os.Open(capture)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := replay.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	samples, tid := 0, uint32(0)
	dec := perfrecord.Decoder{SampleType: perfevent.SampleType, SampleIDAll: true}
	for _, r := range recs {
		if h, err := perfrecord.ParseHeader(r.Data); err == nil && h.Type == perfrecord.TypeSample {
			var s perfrecord.Sample
			if dec.Sample(r.Data, &s) == nil {
				samples++
				tid = s.Tid
			}
		}
	}
	if samples < 100 {
		t.Fatalf("the capture holds %d samples; record it again with -update", samples)
	}
	recs = append(recs, replay.Record{CPU: 1, Data: lostRecord(tid, 7)}, replay.Record{CPU: 0, Data: []byte{9, 0, 0, 0, 0, 0, 8}})
	src := replay.NewSource(recs, 64)
	r, err := Replay(src, store.Meta{Pid: int(tid), Command: []string{"burn"}, Event: "cpu-clock"}, Options{Freq: 999})
	if err != nil {
		t.Fatal(err)
	}
	if code := r.Loop(); code != 0 {
		t.Errorf("exit %d", code)
	}
	run, err := store.Load(r.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	m := run.Meta
	if m.BadRecords != 1 {
		t.Errorf("%d bad records counted, want 1", m.BadRecords)
	}
	if m.Samples != uint64(samples) || m.Lost != 7 || m.LostByCPU["1"] != 7 || m.LostByThread[strconv.Itoa(int(tid))] != 7 || !m.Finished {
		t.Errorf("replayed run: %d samples (capture has %d), lost %d %v %v, finished %v",
			m.Samples, samples, m.Lost, m.LostByCPU, m.LostByThread, m.Finished)
	}
	if len(run.Profile.Threads) == 0 || len(run.Profile.Stacks) == 0 {
		t.Errorf("no threads or stacks: %d, %d", len(run.Profile.Threads), len(run.Profile.Stacks))
	}
}

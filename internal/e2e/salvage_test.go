package e2e

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// samplesRecords walks a samples file's chunk records: each one's offset and samples.
func samplesRecords(t *testing.T, b []byte) (offs []int, ns []uint64) {
	t.Helper()
	for off := 16; off+36 <= len(b); {
		size := int(binary.LittleEndian.Uint32(b[off:]))
		if off+8+size > len(b) {
			break
		}
		offs = append(offs, off)
		ns = append(ns, uint64(binary.LittleEndian.Uint32(b[off+32:])))
		off += 8 + size
	}
	return offs, ns
}

// TestDamagedSamplesFileCostsItsChunks records 2 threads at 4999 Hz until the run's
// samples file holds at least three chunks, then cuts the file short in the middle of its
// second-to-last chunk, as a full disk or a crash would: timeline, save and export work
// on the rest and say what was lost; list and status show the damage with the same
// numbers.
func TestDamagedSamplesFileCostsItsChunks(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	e.env = append(e.env, "STAX_CHECKPOINT_INTERVAL=200ms")
	dir := t.TempDir()
	bin := testutil.CC(t, dir, "spinwait", "gcc", append(cflags, "-pthread", filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/spinwait.c"))...)
	l := &liveRecording{cmd: e.cmd("record", "-q", "-F", "4999", "--run-id-file", filepath.Join(dir, "run.id"), "--", bin, "2")}
	startLive(t, l)
	// Some 13,000 samples a chunk: four chunks sealed, the last two kept in memory too.
	if _, errOut, code := e.run("wait", "--for-samples", "55000", "--timeout-ms", "300000"); code != 0 {
		t.Fatalf("wait: exit %d: %s\n%s", code, errOut, l.out.String())
	}
	if code := l.end(t); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, l.out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.id"))
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(b))
	samplesPath := filepath.Join(e.home, "runs", id+".samples")
	data, err := os.ReadFile(samplesPath)
	if err != nil {
		t.Fatal(err)
	}
	offs, ns := samplesRecords(t, data)
	if len(offs) < 3 {
		t.Fatalf("the samples file holds %d chunks, want 3 or more", len(offs))
	}
	cut := len(offs) - 2
	var lost uint64
	for _, n := range ns[cut:] {
		lost += n
	}
	if err := os.Truncate(samplesPath, int64(offs[cut]+100)); err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(2) + " of " + strconv.Itoa(len(offs)) + " chunks lost, " + strconv.FormatUint(lost, 10) + " samples"

	var st api.Status
	e.mustJSON(&st, "status", "--run", id)
	if d := st.SamplesDamage; d == nil || d.Chunks != 2 || d.OfChunks != len(offs) || d.Samples != lost || d.FromNs >= d.ToNs {
		t.Errorf("status: damage %+v, want 2 of %d chunks, %d samples", d, len(offs), lost)
	}
	text, _, _ := e.run("status", "--run", id)
	if !strings.Contains(text, "damaged:") || !strings.Contains(text, want) {
		t.Errorf("status does not show the damage (%s):\n%s", want, text)
	}
	var list api.List
	e.mustJSON(&list, "list")
	if len(list.Runs) != 1 || list.Runs[0].SamplesDamage == nil || list.Runs[0].SamplesDamage.Samples != lost {
		t.Errorf("list: %+v", list.Runs)
	}
	if text, _, _ := e.run("list"); !strings.Contains(text, want) {
		t.Errorf("list does not show the damage (%s):\n%s", want, text)
	}

	out, errOut, code := e.run("timeline", "--run", id, "--json")
	if code != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("timeline: exit %d, want 0 and a note (%s):\n%s", code, want, errOut)
	}
	var tl api.Timeline
	e.mustJSON(&tl, "timeline", "--run", id)
	var inSeries uint64
	for _, n := range tl.Total {
		inSeries += n
	}
	if inSeries != st.Meta.Samples-lost {
		t.Errorf("timeline holds %d samples; the run %d, of which %d lost", inSeries, st.Meta.Samples, lost)
	}
	_ = out

	saved := filepath.Join(dir, "saved.stax")
	if _, errOut, code := e.run("save", "--run", id, saved); code != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("save: exit %d, want 0 and a note (%s):\n%s", code, want, errOut)
	}
	run, err := store.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	if run.Profile.Series.Len() != st.Meta.Samples-lost || !strings.Contains(strings.Join(run.Meta.Notes, "\n"), want) {
		t.Errorf("saved file: %d samples' times (want %d), notes %q", run.Profile.Series.Len(), st.Meta.Samples-lost, run.Meta.Notes)
	}
	if _, errOut, code := e.run("export", "--run", id, "--format", "speedscope", "-o", filepath.Join(dir, "x.json")); code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("export: exit %d, want 0 and a note (%s):\n%s", code, want, errOut)
	}
}

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/stax-profiler/stax/internal/store"
)

// TestExportPprofEvents: a run of two events with counters exports to pprof with both
// events and the counters; --event writes one event alone, and the other formats the
// first.
func TestExportPprofEvents(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", "")
	r := fixtureRun("20261101-120000-100", true)
	r.Meta.Events = []store.Event{{Name: "cpu-clock", Freq: 999, Samples: 1535, Count: 1_536_536_535}, {Name: "page-faults", Period: 100, Samples: 10, Count: 1000}}
	r.Meta.Counters = []store.Counter{{Name: "page-faults", Count: 4000}}
	for i := range r.Profile.Entries {
		e := &r.Profile.Entries[i]
		if i == 5 { // the page fault
			e.Event = 1
			continue
		}
		e.Counters = []uint64{uint64(i) * 400}
	}
	if err := store.Save(store.Path(r.Meta.ID), r); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	read := func(args ...string) *profile.Profile {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(append([]string{"export", "-f", "pprof", "-o", "p.pb.gz"}, args...), &out, &errOut); code != 0 {
			t.Fatalf("export %v: exit %d: %s", args, code, errOut.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, "p.pb.gz"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.ParseData(b)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	types := func(p *profile.Profile) string {
		var s []string
		for _, st := range p.SampleType {
			s = append(s, st.Type+"/"+st.Unit)
		}
		return strings.Join(s, " ")
	}
	sum := func(p *profile.Profile, name string) int64 {
		i, err := p.SampleIndexByName(name)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, s := range p.Sample {
			n += s.Value[i]
		}
		return n
	}

	all := read()
	if got, want := types(all), "samples/count cpu/nanoseconds page-faults/count page-faults-counter/count"; got != want {
		t.Errorf("sample types %q, want %q", got, want)
	}
	if sum(all, "samples") != 1545 || sum(all, "page-faults") != 1000 || sum(all, "page-faults-counter") != 400*(21-5) {
		t.Errorf("samples %d, page-faults %d, counted %d", sum(all, "samples"), sum(all, "page-faults"), sum(all, "page-faults-counter"))
	}

	faults := read("--event", "page-faults")
	if got := types(faults); got != "samples/count page-faults/count" || sum(faults, "page-faults") != 1000 || faults.DefaultSampleType != "page-faults" {
		t.Errorf("--event page-faults: sample types %q, %d faults", got, sum(faults, "page-faults"))
	}
	cpu := read("--event", "cpu-clock")
	if got := types(cpu); got != "samples/count cpu/nanoseconds page-faults/count" || sum(cpu, "samples") != 1535 {
		t.Errorf("--event cpu-clock: sample types %q, %d samples", got, sum(cpu, "samples"))
	}

	var out, errOut bytes.Buffer
	if code := Main([]string{"export", "-f", "folded", "-o", "-"}, &out, &errOut); code != 0 || strings.Contains(out.String(), "asm_exc_page_fault") {
		t.Errorf("folded: exit %d, %s%s", code, out.String(), errOut.String())
	}
}

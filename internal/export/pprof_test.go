package export

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func parsePprof(t *testing.T, b []byte) *profile.Profile {
	t.Helper()
	p, err := profile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPprof(t *testing.T) {
	r := fixture()
	var buf bytes.Buffer
	if err := WritePprof(&buf, r); err != nil {
		t.Fatal(err)
	}
	p := parsePprof(t, buf.Bytes())
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[0].Unit != "count" ||
		p.SampleType[1].Type != "cpu" || p.SampleType[1].Unit != "nanoseconds" {
		t.Fatalf("sample types %v", p.SampleType)
	}
	if p.Period != 1_000_000 || p.TimeNanos != r.Meta.Start.UnixNano() || p.DurationNanos != 2_500_000_000 {
		t.Errorf("period %d, time %d, duration %d", p.Period, p.TimeNanos, p.DurationNanos)
	}
	var total, cpu int64
	self := map[string]int64{} // leaf function
	inTid := map[int64]int64{} // per tid
	threads := map[string]bool{}
	for _, s := range p.Sample {
		total += s.Value[0]
		cpu += s.Value[1]
		if s.Value[1] != s.Value[0]*p.Period {
			t.Errorf("cpu %d for %d samples", s.Value[1], s.Value[0])
		}
		self[s.Location[0].Line[0].Function.Name] += s.Value[0]
		if len(s.NumLabel["pid"]) != 1 || len(s.NumLabel["tid"]) != 1 {
			t.Fatalf("labels %v", s.NumLabel)
		}
		inTid[s.NumLabel["tid"][0]] += s.Value[0]
		threads[s.Label["thread"][0]] = true
	}
	if uint64(total) != r.Profile.TotalSamples() {
		t.Errorf("total %d, want %d", total, r.Profile.TotalSamples())
	}
	// Proportions: self samples per leaf function (the innermost line of the leaf location).
	want := map[string]int64{"jitted_func1": 500, "jitted_func2": 700, "mix": 40, "asm_exc_page_fault": 13,
		"[unknown] 0x7f00000ff000": 7, "std::vector<int>::operator[]": 120, cleanText(hostileName): 80}
	for k, v := range want {
		if self[k] != v {
			t.Errorf("self %q = %d, want %d (all %v)", k, self[k], v, self)
		}
	}
	if inTid[101] != 545 || inTid[102] != 710 || inTid[201] != 203 || inTid[100] != 2 {
		t.Errorf("per tid %v", inTid)
	}
	if !threads["worker<b>"] || !threads["helper?;&"] {
		t.Errorf("thread labels %v", threads)
	}
	// Inlined frames are lines of their function's location, innermost first.
	var found bool
	for _, l := range p.Location {
		if len(l.Line) == 2 && l.Line[0].Function.Name == "mix" {
			found = true
			if l.Line[1].Function.Name != "run_jit" || l.Line[0].Function.Filename != "mix.h" || l.Line[0].Line != 9 {
				t.Errorf("inline location %+v", l.Line)
			}
			if l.Mapping.File != "/opt/app/bin/app" || l.Mapping.BuildID != "abcdef0123456789" {
				t.Errorf("mapping %+v", l.Mapping)
			}
		}
		for _, ln := range l.Line {
			if ln.Function.Name == "mix" && len(l.Line) != 2 {
				t.Errorf("mix outside its inline location: %+v", l.Line)
			}
		}
	}
	if !found {
		t.Error("no location with mix inlined into run_jit")
	}
	maps := map[string]bool{}
	for _, m := range p.Mapping {
		maps[m.File] = true
	}
	for _, m := range []string{"/opt/app/bin/app", "[jit]", "[kernel.kallsyms]", "/opt/app/lib/lib<&>.so", "[unknown]"} {
		if !maps[m] {
			t.Errorf("no mapping %q (have %v)", m, maps)
		}
	}
	for _, l := range p.Location {
		fn := l.Line[len(l.Line)-1].Function.Name
		switch {
		case strings.HasPrefix(fn, "jitted"):
			if l.Mapping.File != "[jit]" {
				t.Errorf("%s in mapping %s", fn, l.Mapping.File)
			}
		case fn == "asm_exc_page_fault":
			if l.Mapping.File != "[kernel.kallsyms]" {
				t.Errorf("%s in mapping %s", fn, l.Mapping.File)
			}
		}
	}
}

func TestPprofWithoutTimes(t *testing.T) {
	var a, b bytes.Buffer
	if err := WritePprof(&a, fixture()); err != nil {
		t.Fatal(err)
	}
	if err := WritePprof(&b, withoutTimes()); err != nil {
		t.Fatal(err)
	}
	pa, pb := parsePprof(t, a.Bytes()), parsePprof(t, b.Bytes())
	if len(pa.Sample) != len(pb.Sample) {
		t.Errorf("%d samples with times, %d without", len(pa.Sample), len(pb.Sample))
	}
}

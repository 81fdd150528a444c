package push

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"go.opentelemetry.io/collector/pdata/pprofile"
)

// decoded is what a test reads back from OTLP profiles: samples by leaf function, by
// thread name, and the window sequence numbers.
type decoded struct {
	byLeaf   map[string]int64
	byThread map[string]int64
	stacks   map[string]int64 // "leaf;caller;..." -> samples
	seqs     []int64
	resource map[string]any
	buildIDs []string
}

func decodeOTLP(t *testing.T, body []byte) decoded {
	t.Helper()
	if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("gunzip OTLP: %v", err)
		}
	}
	pd, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(body)
	if err != nil {
		t.Fatalf("decode OTLP: %v", err)
	}
	return decodeProfiles(pd)
}

func decodeProfiles(pd pprofile.Profiles) decoded {
	d := pd.Dictionary()
	str := func(i int32) string { return d.StringTable().At(int(i)) }
	out := decoded{byLeaf: map[string]int64{}, byThread: map[string]int64{}, stacks: map[string]int64{}, resource: map[string]any{}}
	for i := 0; i < d.MappingTable().Len(); i++ {
		for _, ai := range d.MappingTable().At(i).AttributeIndices().AsRaw() {
			a := d.AttributeTable().At(int(ai))
			if str(a.KeyStrindex()) == buildIDKey {
				out.buildIDs = append(out.buildIDs, a.Value().Str())
			}
		}
	}
	for _, rp := range pd.ResourceProfiles().All() {
		for k, v := range rp.Resource().Attributes().All() {
			out.resource[k] = v.AsRaw()
		}
		for _, sp := range rp.ScopeProfiles().All() {
			for _, p := range sp.Profiles().All() {
				for _, ai := range p.AttributeIndices().AsRaw() {
					a := d.AttributeTable().At(int(ai))
					if str(a.KeyStrindex()) == SequenceKey {
						out.seqs = append(out.seqs, a.Value().Int())
					}
				}
				for _, s := range p.Samples().All() {
					var v int64
					for _, x := range s.Values().AsRaw() {
						v += x
					}
					var names []string
					for _, li := range d.StackTable().At(int(s.StackIndex())).LocationIndices().AsRaw() {
						for _, ln := range d.LocationTable().At(int(li)).Lines().All() {
							names = append(names, str(d.FunctionTable().At(int(ln.FunctionIndex())).NameStrindex()))
						}
					}
					if len(names) > 0 {
						out.byLeaf[names[0]] += v
					}
					key := ""
					for i, n := range names {
						if i > 0 {
							key += ";"
						}
						key += n
					}
					out.stacks[key] += v
					for _, ai := range s.AttributeIndices().AsRaw() {
						a := d.AttributeTable().At(int(ai))
						if str(a.KeyStrindex()) == "thread.name" {
							out.byThread[a.Value().Str()] += v
						}
					}
				}
			}
		}
	}
	return out
}

func TestOTLPNamesValuesAndAttributes(t *testing.T) {
	run := fixture()
	run.Profile.Mappings = nil
	enc := Encoder{Protocol: OTLP, Resource: Resource{Host: "h1", Service: "app", Exe: "/opt/app/bin/app", Pid: 10}}
	r, empty, err := enc.Window(run, 0, 0, 7)
	if err != nil || empty {
		t.Fatalf("encode: %v (empty %v)", err, empty)
	}
	if r.Path != "/v1development/profiles" || r.ContentType != "application/x-protobuf" || r.ContentEncoding != "gzip" {
		t.Errorf("request %q %q", r.Path, r.ContentType)
	}
	got := decodeOTLP(t, r.Body)
	if got.byLeaf["jit_a"] != 100 || got.byLeaf["jit_b"] != 200 {
		t.Errorf("samples by leaf: %v", got.byLeaf)
	}
	if got.stacks["jit_a;main"] != 100 || got.stacks["jit_b;main"] != 200 {
		t.Errorf("stacks: %v", got.stacks)
	}
	if got.byThread["worker-1"] != 100 || got.byThread["worker-2"] != 200 {
		t.Errorf("samples by thread: %v", got.byThread)
	}
	if len(got.seqs) != 1 || got.seqs[0] != 7 {
		t.Errorf("sequence %v, want [7]", got.seqs)
	}
	want := map[string]any{"host.name": "h1", "service.name": "app", "process.executable.path": "/opt/app/bin/app", "process.pid": int64(10)}
	for k, v := range want {
		if got.resource[k] != v {
			t.Errorf("resource %s = %v, want %v", k, got.resource[k], v)
		}
	}
}

func TestOTLPBuildIDsOfMappings(t *testing.T) {
	run := fixture()
	run.Code = append(run.Code, storeCode("/opt/app/bin/app", "0123456789abcdef"))
	r, _, err := Encoder{Protocol: OTLP}.Window(run, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := decodeOTLP(t, r.Body)
	if len(got.buildIDs) != 1 || got.buildIDs[0] != "0123456789abcdef" {
		t.Errorf("build-ids %v", got.buildIDs)
	}
}

// TestWindowsSplitSamples: consecutive windows hold every sample once.
func TestWindowsSplitSamples(t *testing.T) {
	run := fixture()
	enc := Encoder{Protocol: OTLP}
	cuts := []uint64{0, fixtureStart + 500_000_000, fixtureStart + 1_200_000_000, 0}
	var a, b int64
	for i := 0; i+1 < len(cuts); i++ {
		r, empty, err := enc.Window(run, cuts[i], cuts[i+1], uint64(i+1))
		if err != nil || empty {
			t.Fatalf("window %d: %v (empty %v)", i, err, empty)
		}
		got := decodeOTLP(t, r.Body)
		a += got.byLeaf["jit_a"]
		b += got.byLeaf["jit_b"]
	}
	if a != 100 || b != 200 {
		t.Errorf("windows add up to jit_a %d, jit_b %d; want 100, 200", a, b)
	}
	if _, empty, _ := enc.Window(run, fixtureStart+3_000_000_000, 0, 9); !empty {
		t.Error("a window after the last sample is not empty")
	}
}

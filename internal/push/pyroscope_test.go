package push

import (
	"context"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/push/pushtest"
)

// TestPyroscopeIngest sends a window to a server that checks the request as Pyroscope's
// API documents it, and reads the profile back.
func TestPyroscopeIngest(t *testing.T) {
	srv := pushtest.NewPyroscope()
	defer srv.Close()
	tg, err := ParseTarget("pyroscope+" + srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	enc := Encoder{Protocol: Pyroscope, Resource: Resource{Host: "h1", Service: "app", Pid: 10}}
	r, _, err := enc.Window(fixture(), 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := Send(context.Background(), tg, nil, 5*time.Second, r); err != nil {
		t.Fatal(err)
	}
	ins, errs := srv.Ingests()
	if len(errs) > 0 || len(ins) != 1 {
		t.Fatalf("ingests %d, refused %q", len(ins), errs)
	}
	in := ins[0]
	if in.Name != "app{hostname=h1,pid=10}" || in.SampleRate != 150 {
		t.Errorf("name %q sampleRate %d", in.Name, in.SampleRate)
	}
	start := fixture().Meta.Start.Unix()
	if in.From != start || in.Until < start+1 || in.Until > start+3 {
		t.Errorf("from %d until %d, want %d and about 2 s later", in.From, in.Until, start)
	}
	if got := pushtest.SamplesByLeaf(in.Profile); got["jit_a"] != 100 || got["jit_b"] != 200 {
		t.Errorf("samples by leaf %v", got)
	}
}

package export

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stax-profiler/stax/internal/store"
)

// ssFile follows speedscope's file-format schema.
type ssFile struct {
	Schema   string `json:"$schema"`
	Name     string `json:"name"`
	Exporter string `json:"exporter"`
	Shared   struct {
		Frames []struct {
			Name string `json:"name"`
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"frames"`
	} `json:"shared"`
	Profiles []struct {
		Type       string   `json:"type"`
		Name       string   `json:"name"`
		Unit       string   `json:"unit"`
		StartValue float64  `json:"startValue"`
		EndValue   float64  `json:"endValue"`
		Samples    [][]int  `json:"samples"`
		Weights    []uint64 `json:"weights"`
	} `json:"profiles"`
	ActiveProfileIndex *int `json:"activeProfileIndex"`
}

func readSpeedscope(t *testing.T, b []byte) ssFile {
	t.Helper()
	var f ssFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return f
}

func TestSpeedscope(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() *store.Run
	}{{"series", fixture}, {"no-series", withoutTimes}} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run()
			var buf bytes.Buffer
			if err := WriteSpeedscope(&buf, r); err != nil {
				t.Fatal(err)
			}
			f := readSpeedscope(t, buf.Bytes())
			if f.Schema != SpeedscopeSchema {
				t.Errorf("schema %q", f.Schema)
			}
			if len(f.Shared.Frames) != len(r.Profile.Frames) {
				t.Fatalf("%d frames, want %d", len(f.Shared.Frames), len(r.Profile.Frames))
			}
			if f.Shared.Frames[fHostile].Name != cleanText(hostileName) || f.Shared.Frames[fHostile].File != "a&b<c>.cc" {
				t.Errorf("hostile frame %+v", f.Shared.Frames[fHostile])
			}
			if f.Shared.Frames[fJIT1].Name != "jitted_func1 [jit]" || f.Shared.Frames[fMix].Name != "mix (inlined)" {
				t.Errorf("frames %+v", f.Shared.Frames)
			}
			names := map[string]bool{}
			var total, most uint64
			busiest := -1
			self := map[int]uint64{}
			for pi, p := range f.Profiles {
				names[p.Name] = true
				if p.Type != "sampled" || p.Unit != "nanoseconds" || len(p.Samples) != len(p.Weights) {
					t.Fatalf("profile %s: type %s unit %s, %d samples, %d weights", p.Name, p.Type, p.Unit, len(p.Samples), len(p.Weights))
				}
				var sum uint64
				for i, s := range p.Samples {
					sum += p.Weights[i]
					for _, fi := range s {
						if fi < 0 || fi >= len(f.Shared.Frames) {
							t.Fatalf("frame index %d", fi)
						}
					}
					if len(s) > 0 {
						self[s[len(s)-1]] += p.Weights[i]
					}
					if tc.name == "series" && i > 0 && sameStack(s, p.Samples[i-1]) {
						t.Errorf("%s: consecutive samples %d and %d not merged", p.Name, i-1, i)
					}
				}
				if float64(sum) != p.EndValue-p.StartValue {
					t.Errorf("%s: weights sum to %d, range %v-%v", p.Name, sum, p.StartValue, p.EndValue)
				}
				total += sum
				if sum > most {
					busiest, most = pi, sum
				}
			}
			if f.ActiveProfileIndex == nil || *f.ActiveProfileIndex != busiest {
				t.Errorf("the file opens on profile %v, want the busiest, %d", f.ActiveProfileIndex, busiest)
			}
			period := uint64(1e9 / r.Meta.Freq)
			if total != r.Profile.TotalSamples()*period {
				t.Errorf("weights sum to %d, want %d", total, r.Profile.TotalSamples()*period)
			}
			for _, n := range []string{"worker-a (tid 101)", "worker<b> (tid 102)", "app (tid 100)", "helper?;& (tid 201)"} {
				if !names[n] {
					t.Errorf("no profile %q (have %v)", n, names)
				}
			}
			// Samples are root first: the leaf of stack 0 is jitted_func1.
			if self[fJIT1] != 500*period || self[fMix] != 40*period {
				t.Errorf("self jitted_func1 %d, mix %d", self[fJIT1], self[fMix])
			}
			if f.Profiles[0].Samples[0][0] != fMain {
				t.Errorf("first sample of %s does not start at main: %v", f.Profiles[0].Name, f.Profiles[0].Samples[0])
			}
		})
	}
}

func sameStack(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package export

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stax-profiler/stax/internal/store"
)

// fxFile is the part of the processed profile format the tests read back.
type fxFile struct {
	Meta struct {
		Interval                   float64      `json:"interval"`
		StartTime                  float64      `json:"startTime"`
		ProcessType                *int         `json:"processType"`
		Product                    string       `json:"product"`
		Version                    int          `json:"version"`
		PreprocessedProfileVersion int          `json:"preprocessedProfileVersion"`
		Categories                 []fxCategory `json:"categories"`
		MarkerSchema               []any        `json:"markerSchema"`
		Symbolicated               bool         `json:"symbolicated"`
	} `json:"meta"`
	Libs    []fxLib `json:"libs"`
	Threads []struct {
		Name          string          `json:"name"`
		Pid           string          `json:"pid"`
		Tid           uint32          `json:"tid"`
		IsMainThread  bool            `json:"isMainThread"`
		ProcessType   string          `json:"processType"`
		StringArray   []string        `json:"stringArray"`
		Samples       fxSamples       `json:"samples"`
		StackTable    fxStackTable    `json:"stackTable"`
		FrameTable    fxFrameTable    `json:"frameTable"`
		FuncTable     fxFuncTable     `json:"funcTable"`
		ResourceTable fxResourceTable `json:"resourceTable"`
		NativeSymbols fxNativeSymbols `json:"nativeSymbols"`
		Markers       fxMarkers       `json:"markers"`
	} `json:"threads"`
}

func TestFirefox(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func() *store.Run
	}{{"series", fixture}, {"no-series", withoutTimes}} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run()
			var buf bytes.Buffer
			if err := WriteFirefox(&buf, r); err != nil {
				t.Fatal(err)
			}
			var f fxFile
			if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
				t.Fatal(err)
			}
			m := f.Meta
			if m.Interval != 1 || m.StartTime != float64(r.Meta.Start.UnixMilli()) || m.ProcessType == nil || m.Product != "app" ||
				m.Version != FirefoxGeckoVersion || m.PreprocessedProfileVersion != FirefoxPreprocessedVersion ||
				len(m.Categories) != 4 || m.MarkerSchema == nil || !m.Symbolicated {
				t.Errorf("meta %+v", m)
			}
			if len(f.Threads) != 4 {
				t.Fatalf("%d threads", len(f.Threads))
			}
			var total uint64
			names := map[string]bool{}
			self := map[string]uint64{}
			for _, th := range f.Threads {
				names[th.Name] = true
				if th.IsMainThread != (th.Name == "app") {
					t.Errorf("%s: main %v", th.Name, th.IsMainThread)
				}
				str := func(i int) string {
					if i < 0 || i >= len(th.StringArray) {
						t.Fatalf("%s: string %d of %d", th.Name, i, len(th.StringArray))
					}
					return th.StringArray[i]
				}
				s, st, fr, fn, rs := th.Samples, th.StackTable, th.FrameTable, th.FuncTable, th.ResourceTable
				if s.Length != len(s.Stack) || s.Length != len(s.Time) || (s.Weight != nil && len(s.Weight) != s.Length) ||
					st.Length != len(st.Frame) || st.Length != len(st.Prefix) || st.Length != len(st.Category) || st.Length != len(st.Subcategory) ||
					fr.Length != len(fr.Func) || fr.Length != len(fr.Address) || fr.Length != len(fr.InlineDepth) || fr.Length != len(fr.Category) ||
					fr.Length != len(fr.Subcategory) || fr.Length != len(fr.Line) || fr.Length != len(fr.Column) || fr.Length != len(fr.NativeSymbol) ||
					fr.Length != len(fr.InnerWindowID) || fn.Length != len(fn.Name) || fn.Length != len(fn.Resource) || fn.Length != len(fn.IsJS) ||
					fn.Length != len(fn.RelevantForJS) || fn.Length != len(fn.FileName) || fn.Length != len(fn.LineNumber) ||
					rs.Length != len(rs.Name) || rs.Length != len(rs.Lib) || rs.Length != len(rs.Type) || rs.Length != len(rs.Host) ||
					th.Markers.Length != 0 || th.NativeSymbols.Length != 0 {
					t.Fatalf("%s: table lengths disagree", th.Name)
				}
				for i := range st.Frame {
					if p := st.Prefix[i]; p != nil && *p >= i {
						t.Fatalf("%s: stack %d has prefix %d", th.Name, i, *p)
					}
					if st.Frame[i] >= fr.Length || st.Category[i] != fr.Category[st.Frame[i]] {
						t.Fatalf("%s: stack %d frame %d", th.Name, i, st.Frame[i])
					}
				}
				for i, fi := range fr.Func {
					if fi >= fn.Length {
						t.Fatalf("%s: frame %d func %d", th.Name, i, fi)
					}
					name := str(fn.Name[fi])
					cat := m.Categories[fr.Category[i]].Name
					switch name {
					case "jitted_func1", "jitted_func2":
						if cat != "JIT" {
							t.Errorf("%s in category %s", name, cat)
						}
					case "asm_exc_page_fault":
						if cat != "Kernel" {
							t.Errorf("%s in category %s", name, cat)
						}
					case "main", cleanText(hostileName):
						if cat != "Native" {
							t.Errorf("%s in category %s", name, cat)
						}
					case "mix", "std::vector<int>::operator[]":
						if fr.InlineDepth[i] != 1 {
							t.Errorf("%s at inline depth %d", name, fr.InlineDepth[i])
						}
					}
					if name == cleanText(hostileName) && (fn.FileName[fi] == nil || str(*fn.FileName[fi]) != "a&b<c>.cc") {
						t.Errorf("hostile function's file %v", fn.FileName[fi])
					}
					if r := fn.Resource[fi]; r < -1 || r >= rs.Length {
						t.Fatalf("func %d resource %d", fi, r)
					}
				}
				last := -1.0
				for i, sp := range s.Stack {
					if s.Time[i] < last || s.Time[i] < 0 || s.Time[i] > 2000 {
						t.Fatalf("%s: sample %d at %v ms (previous %v)", th.Name, i, s.Time[i], last)
					}
					last = s.Time[i]
					w := uint64(1)
					if s.Weight != nil {
						w = uint64(s.Weight[i])
					}
					total += w
					if sp == nil || *sp >= st.Length {
						t.Fatalf("%s: sample %d stack %v", th.Name, i, sp)
					}
					self[str(fn.Name[fr.Func[st.Frame[*sp]]])] += w
				}
			}
			if total != r.Profile.TotalSamples() {
				t.Errorf("%d samples, want %d", total, r.Profile.TotalSamples())
			}
			if self["jitted_func1"] != 500 || self["mix"] != 40 || self["std::vector<int>::operator[]"] != 120 {
				t.Errorf("self %v", self)
			}
			for _, n := range []string{"worker-a", "worker<b>", "app", "helper?;&"} {
				if !names[n] {
					t.Errorf("no thread %q", n)
				}
			}
			libs := map[string]string{}
			for _, l := range f.Libs {
				id := ""
				if l.CodeID != nil {
					id = *l.CodeID
				}
				libs[l.Path] = id
			}
			if id, ok := libs["/opt/app/bin/app"]; !ok || id != "abcdef0123456789" {
				t.Errorf("libs %v", libs)
			}
		})
	}
}

package export

import (
	"bufio"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// Firefox Profiler processed-format versions written. The profiler upgrades older
// processed profiles when it loads them, so these need not be the newest.
const (
	FirefoxPreprocessedVersion = 49
	FirefoxGeckoVersion        = 24
)

// Categories of the Firefox profile, by index: what colours a frame.
var firefoxCategories = []fxCategory{
	{"Other", "grey", []string{"Other"}},
	{"Native", "blue", []string{"Other"}},
	{"JIT", "green", []string{"Other"}},
	{"Kernel", "orange", []string{"Other"}},
}

func firefoxCategory(kind string) int {
	switch kind {
	case agg.KindUser:
		return 1
	case agg.KindJIT, agg.KindPython:
		return 2
	case agg.KindKernel:
		return 3
	}
	return 0
}

type fxCategory struct {
	Name          string   `json:"name"`
	Color         string   `json:"color"`
	Subcategories []string `json:"subcategories"`
}

type fxProfile struct {
	Meta             fxMeta     `json:"meta"`
	Libs             []fxLib    `json:"libs"`
	Threads          []fxThread `json:"threads"`
	Pages            []any      `json:"pages"`
	ProfilerOverhead []any      `json:"profilerOverhead"`
	Counters         []any      `json:"counters"`
}

type fxMeta struct {
	Categories                    []fxCategory   `json:"categories"`
	Debug                         bool           `json:"debug"`
	Extensions                    map[string]any `json:"extensions"`
	Interval                      float64        `json:"interval"` // ms
	PreprocessedProfileVersion    int            `json:"preprocessedProfileVersion"`
	ProcessType                   int            `json:"processType"`
	Product                       string         `json:"product"`
	StartTime                     float64        `json:"startTime"` // ms since the epoch
	Symbolicated                  bool           `json:"symbolicated"`
	PausedRanges                  []any          `json:"pausedRanges"`
	Version                       int            `json:"version"`
	MarkerSchema                  []any          `json:"markerSchema"`
	UsesOnlyOneStackType          bool           `json:"usesOnlyOneStackType"`
	DoesNotUseFrameImplementation bool           `json:"doesNotUseFrameImplementation"`
	SourceCodeIsNotOnSearchfox    bool           `json:"sourceCodeIsNotOnSearchfox"`
	ImportedFrom                  string         `json:"importedFrom,omitempty"`
}

type fxLib struct {
	Arch       string  `json:"arch"`
	Name       string  `json:"name"`
	Path       string  `json:"path"`
	DebugName  string  `json:"debugName"`
	DebugPath  string  `json:"debugPath"`
	BreakpadID string  `json:"breakpadId"`
	CodeID     *string `json:"codeId"`
}

type fxThread struct {
	Name                string          `json:"name"`
	IsMainThread        bool            `json:"isMainThread"`
	ProcessType         string          `json:"processType"`
	ProcessName         string          `json:"processName"`
	ProcessStartupTime  float64         `json:"processStartupTime"`
	ProcessShutdownTime *float64        `json:"processShutdownTime"`
	RegisterTime        float64         `json:"registerTime"`
	UnregisterTime      *float64        `json:"unregisterTime"`
	PausedRanges        []any           `json:"pausedRanges"`
	Pid                 string          `json:"pid"`
	Tid                 uint32          `json:"tid"`
	Samples             fxSamples       `json:"samples"`
	Markers             fxMarkers       `json:"markers"`
	StackTable          fxStackTable    `json:"stackTable"`
	FrameTable          fxFrameTable    `json:"frameTable"`
	FuncTable           fxFuncTable     `json:"funcTable"`
	ResourceTable       fxResourceTable `json:"resourceTable"`
	NativeSymbols       fxNativeSymbols `json:"nativeSymbols"`
	StringArray         []string        `json:"stringArray"`
	strings             map[string]int  // interning for StringArray
	frames              map[[2]int]int  // (stax frame id, inline depth) -> frame index
	funcs               map[[3]int]int  // (name, file, resource) -> func index
	stacks              map[[2]int]int  // (prefix+1, frame) -> stack index
	resources           map[string]int  // image -> resource index
	stackOf             map[uint32]*int // stax stack id -> stack index (nil: empty)
	scratch             []fxFramePos    // a stack's frames, root first
	libs                *[]fxLib        // the profile's libraries
	libIndex            map[string]int  // image -> lib index
	buildIDs            map[string]string
}

type fxFramePos struct {
	id    uint32
	depth int
}

type fxSamples struct {
	Length     int       `json:"length"`
	Stack      []*int    `json:"stack"`
	Time       []float64 `json:"time"`
	Weight     []uint32  `json:"weight"` // null: every sample weighs 1
	WeightType string    `json:"weightType"`
}

type fxMarkers struct {
	Length    int   `json:"length"`
	Category  []int `json:"category"`
	Data      []any `json:"data"`
	EndTime   []any `json:"endTime"`
	Name      []int `json:"name"`
	Phase     []int `json:"phase"`
	StartTime []any `json:"startTime"`
}

type fxStackTable struct {
	Length      int    `json:"length"`
	Prefix      []*int `json:"prefix"`
	Frame       []int  `json:"frame"`
	Category    []int  `json:"category"`
	Subcategory []int  `json:"subcategory"`
}

type fxFrameTable struct {
	Length         int    `json:"length"`
	Address        []int  `json:"address"`
	InlineDepth    []int  `json:"inlineDepth"`
	Category       []int  `json:"category"`
	Subcategory    []int  `json:"subcategory"`
	Func           []int  `json:"func"`
	NativeSymbol   []*int `json:"nativeSymbol"`
	InnerWindowID  []*int `json:"innerWindowID"`
	Implementation []*int `json:"implementation"`
	Line           []*int `json:"line"`
	Column         []*int `json:"column"`
}

type fxFuncTable struct {
	Length        int    `json:"length"`
	Name          []int  `json:"name"`
	IsJS          []bool `json:"isJS"`
	RelevantForJS []bool `json:"relevantForJS"`
	Resource      []int  `json:"resource"`
	FileName      []*int `json:"fileName"`
	LineNumber    []*int `json:"lineNumber"`
	ColumnNumber  []*int `json:"columnNumber"`
}

type fxResourceTable struct {
	Length int    `json:"length"`
	Lib    []*int `json:"lib"`
	Name   []int  `json:"name"`
	Host   []*int `json:"host"`
	Type   []int  `json:"type"`
}

type fxNativeSymbols struct {
	Length       int   `json:"length"`
	LibIndex     []int `json:"libIndex"`
	Address      []int `json:"address"`
	Name         []int `json:"name"`
	FunctionSize []int `json:"functionSize"`
}

// WriteFirefox writes the run in the Firefox Profiler's processed profile format (what
// samply writes), for profiler.firefox.com.
//
// Each thread of the run is a thread of the profile, with its own string, frame, function,
// stack and resource tables. Samples keep their times (milliseconds from the run's start)
// in time order; a run without a series gives one weighted sample per entry. A stax frame
// is a function; inlined frames are frames with an inline depth over the function they
// were inlined into. Each image is a resource (and a library, with its build-id as code
// id). Frames are coloured by category: Native (blue), JIT (green), Kernel (orange) and
// Other (grey) for unknown code.
func WriteFirefox(w io.Writer, run *store.Run) error {
	if err := check(run); err != nil {
		return err
	}
	p := &run.Profile
	samples, err := samplesByTime(p)
	if err != nil {
		return err
	}
	base := baseTime(run, samples)
	startMs := float64(run.Meta.Start.UnixNano()) / 1e6
	if run.Meta.Start.IsZero() {
		startMs = 0
	}
	interval := 1.0
	if run.Meta.Freq > 0 {
		interval = 1000 / float64(run.Meta.Freq)
	}
	out := fxProfile{
		Meta: fxMeta{
			Categories: firefoxCategories,
			Extensions: map[string]any{"length": 0, "baseURL": []string{}, "id": []string{}, "name": []string{}},
			Interval:   interval, PreprocessedProfileVersion: FirefoxPreprocessedVersion, Product: productName(&run.Meta),
			StartTime: startMs, Symbolicated: true, PausedRanges: []any{}, Version: FirefoxGeckoVersion,
			MarkerSchema: []any{}, UsesOnlyOneStackType: true, DoesNotUseFrameImplementation: true,
			SourceCodeIsNotOnSearchfox: true, ImportedFrom: "stax",
		},
		Libs: []fxLib{}, Pages: []any{}, ProfilerOverhead: []any{}, Counters: []any{},
	}
	buildIDs := map[string]string{}
	for _, c := range run.Code {
		if c.Path != "" && c.BuildID != "" {
			buildIDs[c.Path] = c.BuildID
		}
	}
	libIndex := map[string]int{}
	names := threadNames(p)
	keys := sortedThreads(p)
	if run.OffCPU != nil && len(run.OffCPUIntervals) > 0 {
		keys = withOffCPUThreads(keys, names, run.OffCPU)
	}
	index := make(map[threadKey]int, len(keys))
	out.Threads = make([]fxThread, len(keys))
	for i, k := range keys {
		index[k] = i
		t := newFxThread(&out.Libs, libIndex, buildIDs)
		t.Name = cleanText(names[k])
		if t.Name == "" {
			t.Name = "tid " + strconv.FormatUint(uint64(k.tid), 10)
		}
		t.IsMainThread = k.tid == k.pid
		t.ProcessName = out.Meta.Product
		if k.pid != uint32(run.Meta.Pid) && names[threadKey{k.pid, k.pid}] != "" {
			t.ProcessName = cleanText(names[threadKey{k.pid, k.pid}])
		}
		t.Pid = strconv.FormatUint(uint64(k.pid), 10)
		t.Tid = k.tid
		t.RegisterTime = -1
		out.Threads[i] = *t
	}
	for _, s := range samples {
		e := &p.Entries[s.entry]
		t := &out.Threads[index[threadKey{e.Pid, e.Tid}]]
		ms := (float64(s.time) - float64(base)) / 1e6
		if t.RegisterTime < 0 {
			t.RegisterTime = ms
		}
		st := t.stack(p, e.Stack)
		t.Samples.Stack = append(t.Samples.Stack, st)
		t.Samples.Time = append(t.Samples.Time, ms)
		if s.weight != 1 && t.Samples.Weight == nil {
			t.Samples.Weight = make([]uint32, len(t.Samples.Time)-1, cap(t.Samples.Time))
			for i := range t.Samples.Weight {
				t.Samples.Weight[i] = 1
			}
		}
		if t.Samples.Weight != nil {
			t.Samples.Weight = append(t.Samples.Weight, s.weight)
		}
	}
	addFirefoxMarkers(out.Threads, index, run, base)
	if run.OffCPU != nil && len(run.OffCPUIntervals) > 0 {
		out.Meta.MarkerSchema = append(out.Meta.MarkerSchema, offCPUMarkerSchema)
		byTid := map[uint32]int{}
		for i, k := range keys {
			byTid[k.tid] = i
		}
		reasons := views.StackReasons(run.OffCPU)
		for _, iv := range run.OffCPUIntervals {
			i, ok := byTid[iv.Tid]
			if !ok || iv.Start < base {
				continue
			}
			reason := views.ReasonOther
			if iv.Stack != agg.NoStack && int(iv.Stack) < len(reasons) {
				reason = views.Reasons[reasons[iv.Stack]]
			}
			out.Threads[i].offCPUMarker(reason, (float64(iv.Start)-float64(base))/1e6, (float64(iv.End)-float64(base))/1e6, iv.Waker)
		}
	}
	for i := range out.Threads {
		t := &out.Threads[i]
		t.Samples.Length = len(t.Samples.Time)
		if t.RegisterTime < 0 {
			t.RegisterTime = 0
		}
		t.finish()
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if err := json.NewEncoder(bw).Encode(&out); err != nil {
		return err
	}
	return bw.Flush()
}

func newFxThread(libs *[]fxLib, libIndex map[string]int, buildIDs map[string]string) *fxThread {
	return &fxThread{
		ProcessType: "default", PausedRanges: []any{}, StringArray: []string{},
		Samples:    fxSamples{Stack: []*int{}, Time: []float64{}, WeightType: "samples"},
		Markers:    fxMarkers{Category: []int{}, Data: []any{}, EndTime: []any{}, Name: []int{}, Phase: []int{}, StartTime: []any{}},
		StackTable: fxStackTable{Prefix: []*int{}, Frame: []int{}, Category: []int{}, Subcategory: []int{}},
		FrameTable: fxFrameTable{Address: []int{}, InlineDepth: []int{}, Category: []int{}, Subcategory: []int{}, Func: []int{},
			NativeSymbol: []*int{}, InnerWindowID: []*int{}, Implementation: []*int{}, Line: []*int{}, Column: []*int{}},
		FuncTable: fxFuncTable{Name: []int{}, IsJS: []bool{}, RelevantForJS: []bool{}, Resource: []int{}, FileName: []*int{},
			LineNumber: []*int{}, ColumnNumber: []*int{}},
		ResourceTable: fxResourceTable{Lib: []*int{}, Name: []int{}, Host: []*int{}, Type: []int{}},
		NativeSymbols: fxNativeSymbols{LibIndex: []int{}, Address: []int{}, Name: []int{}, FunctionSize: []int{}},
		strings:       map[string]int{}, frames: map[[2]int]int{}, funcs: map[[3]int]int{}, stacks: map[[2]int]int{},
		resources: map[string]int{}, stackOf: map[uint32]*int{}, libs: libs, libIndex: libIndex, buildIDs: buildIDs,
	}
}

func (t *fxThread) str(s string) int {
	if i, ok := t.strings[s]; ok {
		return i
	}
	i := len(t.StringArray)
	t.StringArray = append(t.StringArray, s)
	t.strings[s] = i
	return i
}

func intp(v int) *int { return &v }

// resource returns the resource index of a frame's image.
func (t *fxThread) resource(f *agg.Frame) int {
	img := imageName(f)
	if r, ok := t.resources[img]; ok {
		return r
	}
	r := len(t.ResourceTable.Name)
	t.resources[img] = r
	var lib *int
	typ := 0 // unknown
	if f.Kind == agg.KindUser || f.Kind == agg.KindKernel {
		typ = 1 // library
		li, ok := t.libIndex[img]
		if !ok {
			li = len(*t.libs)
			t.libIndex[img] = li
			l := fxLib{Name: cleanText(filepath.Base(img)), Path: cleanText(img)}
			l.DebugName, l.DebugPath = l.Name, l.Path
			if id := t.buildIDs[f.Image]; id != "" {
				l.CodeID = &id
			}
			*t.libs = append(*t.libs, l)
		}
		lib = intp(li)
	}
	t.ResourceTable.Lib = append(t.ResourceTable.Lib, lib)
	t.ResourceTable.Name = append(t.ResourceTable.Name, t.str(cleanText(img)))
	t.ResourceTable.Host = append(t.ResourceTable.Host, nil)
	t.ResourceTable.Type = append(t.ResourceTable.Type, typ)
	return r
}

// frame returns the frame index of stax frame id at an inline depth.
func (t *fxThread) frame(p *agg.Profile, id uint32, depth int) int {
	k := [2]int{int(id), depth}
	if fi, ok := t.frames[k]; ok {
		return fi
	}
	f := &p.Frames[id]
	res := t.resource(f)
	name := t.str(cleanText(funcName(f)))
	file := -1
	if f.File != "" {
		file = t.str(cleanText(f.File))
	}
	fk := [3]int{name, file, res}
	fn, ok := t.funcs[fk]
	if !ok {
		fn = len(t.FuncTable.Name)
		t.funcs[fk] = fn
		ft := &t.FuncTable
		ft.Name = append(ft.Name, name)
		ft.IsJS = append(ft.IsJS, false)
		ft.RelevantForJS = append(ft.RelevantForJS, false)
		ft.Resource = append(ft.Resource, res)
		var fileP, lineP *int
		if file >= 0 {
			fileP = intp(file)
		}
		if f.Line > 0 {
			lineP = intp(f.Line)
		}
		ft.FileName = append(ft.FileName, fileP)
		ft.LineNumber = append(ft.LineNumber, lineP)
		ft.ColumnNumber = append(ft.ColumnNumber, nil)
	}
	fi := len(t.FrameTable.Func)
	t.frames[k] = fi
	fr := &t.FrameTable
	cat := firefoxCategory(f.Kind)
	fr.Address = append(fr.Address, -1)
	fr.InlineDepth = append(fr.InlineDepth, depth)
	fr.Category = append(fr.Category, cat)
	fr.Subcategory = append(fr.Subcategory, 0)
	fr.Func = append(fr.Func, fn)
	fr.NativeSymbol = append(fr.NativeSymbol, nil)
	fr.InnerWindowID = append(fr.InnerWindowID, nil)
	fr.Implementation = append(fr.Implementation, nil)
	var line *int
	if f.Line > 0 {
		line = intp(f.Line)
	}
	fr.Line = append(fr.Line, line)
	fr.Column = append(fr.Column, nil)
	return fi
}

// stack returns the stack index of stax stack si (nil for an empty stack).
func (t *fxThread) stack(p *agg.Profile, si uint32) *int {
	if st, ok := t.stackOf[si]; ok {
		return st
	}
	// Inline depths: within a location, the function inlined into is depth 0.
	t.scratch = t.scratch[:0]
	for _, lid := range p.Stacks[si] {
		lines := p.Locations[lid].Lines
		for i, ln := range lines {
			t.scratch = append(t.scratch, fxFramePos{ln.Func, len(lines) - 1 - i})
		}
	}
	prefix := -1
	for i := len(t.scratch) - 1; i >= 0; i-- {
		fp := t.scratch[i]
		fi := t.frame(p, fp.id, fp.depth)
		k := [2]int{prefix + 1, fi}
		st, ok := t.stacks[k]
		if !ok {
			st = len(t.StackTable.Frame)
			t.stacks[k] = st
			var pre *int
			if prefix >= 0 {
				pre = intp(prefix)
			}
			t.StackTable.Prefix = append(t.StackTable.Prefix, pre)
			t.StackTable.Frame = append(t.StackTable.Frame, fi)
			t.StackTable.Category = append(t.StackTable.Category, t.FrameTable.Category[fi])
			t.StackTable.Subcategory = append(t.StackTable.Subcategory, 0)
		}
		prefix = st
	}
	var st *int
	if prefix >= 0 {
		st = intp(prefix)
	}
	t.stackOf[si] = st
	return st
}

// finish sets the tables' lengths.
func (t *fxThread) finish() {
	t.StackTable.Length = len(t.StackTable.Frame)
	t.FrameTable.Length = len(t.FrameTable.Func)
	t.FuncTable.Length = len(t.FuncTable.Name)
	t.ResourceTable.Length = len(t.ResourceTable.Name)
}

// offCPUMarkerSchema describes the markers of intervals off CPU: "Blocked" (with the
// reason, and the thread that woke it where known) and "Runnable".
var offCPUMarkerSchema = map[string]any{
	"name":         "OffCPU",
	"display":      []string{"marker-chart", "marker-table", "timeline-overview"},
	"chartLabel":   "{marker.data.reason}",
	"tooltipLabel": "off CPU: {marker.data.reason}",
	"tableLabel":   "{marker.data.reason}",
	"fields": []map[string]any{
		{"key": "reason", "label": "Reason", "format": "string"},
		{"key": "waker", "label": "Woken by thread", "format": "integer"},
	},
}

// offCPUMarker adds an interval off CPU, from start to end (milliseconds), as a marker.
func (t *fxThread) offCPUMarker(reason string, start, end float64, waker uint32) {
	name := "Blocked"
	if reason == views.ReasonRunnable {
		name = "Runnable"
	}
	data := map[string]any{"type": "OffCPU", "reason": reason}
	if waker != 0 {
		data["waker"] = waker
	}
	m := &t.Markers
	m.Name = append(m.Name, t.str(name))
	m.StartTime = append(m.StartTime, start)
	m.EndTime = append(m.EndTime, end)
	m.Phase = append(m.Phase, 1) // an interval
	m.Category = append(m.Category, 0)
	m.Data = append(m.Data, data)
	m.Length++
}

// withOffCPUThreads adds to keys the threads seen only off CPU, and their names to names.
func withOffCPUThreads(keys []threadKey, names map[threadKey]string, off *agg.Profile) []threadKey {
	seen := map[uint32]bool{}
	for _, k := range keys {
		seen[k.tid] = true
	}
	offNames := threadNames(off)
	for _, k := range sortedThreads(off) {
		if !seen[k.tid] {
			seen[k.tid] = true
			keys = append(keys, k)
			if names[k] == "" {
				names[k] = offNames[k]
			}
		}
	}
	return keys
}

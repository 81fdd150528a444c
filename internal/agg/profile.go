package agg

// Frame kinds.
const (
	KindUser    = "user"
	KindKernel  = "kernel"
	KindJIT     = "jit"
	KindUnknown = "unknown"
)

// Frame is a resolved frame: one function in one image. Frames are interned by function
// (name, image, kind, inlined), so samples anywhere in a function, or in any region of a
// split function, share one frame; File and Line are those first seen.
type Frame struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Kind    string `json:"kind"`
	Inlined bool   `json:"inlined,omitempty"`
	// File and Line locate the function (its first line with samples) where debug info exists.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Entry is a count of samples of one thread with one resolved stack.
type Entry struct {
	Tid   uint32 `json:"tid"`
	Pid   uint32 `json:"pid"`
	Stack uint32 `json:"stack"` // index into Profile.Stacks
	Count uint64 `json:"count"`
	// Leaf is the sampled address and LeafFunc the frame of the outermost (non-inline)
	// function that holds it: annotate counts per instruction from these.
	Leaf     uint64 `json:"leaf"`
	LeafFunc int32  `json:"leaf_func"` // -1 when unresolved
	Time     uint64 `json:"time"`      // first sample's time (CLOCK_MONOTONIC ns)
}

// ThreadInfo names a thread.
type ThreadInfo struct {
	Tid  uint32 `json:"tid"`
	Pid  uint32 `json:"pid"`
	Name string `json:"name"`
}

// Profile is a resolved, aggregated run: what every view is computed from.
type Profile struct {
	Frames  []Frame      `json:"frames"`
	Stacks  [][]uint32   `json:"stacks"` // frame ids, leaf first
	Entries []Entry      `json:"entries"`
	Threads []ThreadInfo `json:"threads"`
}

// TotalSamples sums every entry.
func (p *Profile) TotalSamples() uint64 {
	var n uint64
	for _, e := range p.Entries {
		n += e.Count
	}
	return n
}

// FrameTable interns frames.
type FrameTable struct {
	ids    map[frameKey]uint32
	Frames []Frame
}

type frameKey struct {
	fn, image, kind string
	inlined         bool
}

// NewFrameTable returns an empty table.
func NewFrameTable() *FrameTable { return &FrameTable{ids: map[frameKey]uint32{}} }

// Intern returns f's id.
func (t *FrameTable) Intern(f Frame) uint32 {
	k := frameKey{f.Func, f.Image, f.Kind, f.Inlined}
	if id, ok := t.ids[k]; ok {
		if t.Frames[id].File == "" && f.File != "" {
			t.Frames[id].File, t.Frames[id].Line = f.File, f.Line
		}
		return id
	}
	id := uint32(len(t.Frames))
	t.Frames = append(t.Frames, f)
	t.ids[k] = id
	return id
}

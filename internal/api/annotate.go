package api

// The annotate document's wire types. Its model (the query's answer and the annotated
// code, internal/query and internal/annotate) lives above api, so the conversion is
// query's (query.AnnotateDoc), field by field, as convert.go's are.

// Annotate is `stax annotate --json`, and /v1/annotate.
type Annotate struct {
	Schema     int             `json:"schema"`
	Run        string          `json:"run"`
	Annotation *Annotation     `json:"annotation"`
	Others     []AnnotateMatch `json:"other_matches,omitempty"`
	Notes      []string        `json:"notes,omitempty"` // why source lines are missing
	// Versions lists every piece of code the function had, oldest first; Version is the
	// index of the one annotated.
	Versions []CodeVersion `json:"versions,omitempty"`
	Version  int           `json:"version,omitempty"`
	// Inlined is set when the target is a function inlined into the one annotated.
	Inlined *InlinedTarget `json:"inlined,omitempty"`
	// Warning says why the annotated bytes may not be the code that ran.
	Warning string `json:"warning,omitempty"`
	// Window is the part of the run whose samples count (--from/--to, --span); nil: all.
	Window *Window `json:"window,omitempty"`
}

// Annotation is the annotated code of one function (one code version).
type Annotation struct {
	Func    string `json:"func"`
	Image   string `json:"image,omitempty"`
	Arch    string `json:"arch"`
	Start   uint64 `json:"start"`
	End     uint64 `json:"end"` // first address after the code
	Total   uint64 `json:"total"`
	Outside uint64 `json:"outside,omitempty"` // samples outside the code
	// Focus names the inlined function whose samples FocusSamples counts.
	Focus        string `json:"focus,omitempty"`
	FocusSamples uint64 `json:"focus_samples,omitempty"`
	// MaxSamples is the sample count of the hottest instruction.
	MaxSamples uint64 `json:"max_samples"`
	// Counters name the counters read with the samples (stax record --counters);
	// CounterTotals are what they counted in the code's samples, its gaps' included.
	Counters      []string `json:"counters,omitempty"`
	CounterTotals []uint64 `json:"counter_totals,omitempty"`
	// CountersMultiplexed is top's: the share of the time the counters counted, present
	// only where the kernel multiplexed them.
	CountersMultiplexed *float64        `json:"counters_multiplexed,omitempty"`
	Insts               []AnnotatedInst `json:"insts"`
	Gaps                []CodeGap       `json:"gaps,omitempty"`
	SourceBlocks        []SourceBlock   `json:"source_blocks,omitempty"`
	HotLines            []LineStat      `json:"hot_lines,omitempty"`
}

// AnnotatedInst is one instruction with its samples.
type AnnotatedInst struct {
	Addr      uint64 `json:"addr"`
	Len       int    `json:"len"`
	Bytes     []byte `json:"bytes"` // base64
	Text      string `json:"text"`  // in the syntax asked for, branch targets as addresses
	Target    uint64 `json:"target,omitempty"`
	HasTarget bool   `json:"has_target,omitempty"` // Target is a direct branch target
	IsCall    bool   `json:"is_call,omitempty"`
	IsJump    bool   `json:"is_jump,omitempty"` // conditional or unconditional jump (not call/ret)
	IsRet     bool   `json:"is_ret,omitempty"`
	Bad       bool   `json:"bad,omitempty"` // bytes that could not be decoded
	// DataRef is the address a RIP-relative memory operand refers to, if HasDataRef.
	DataRef    uint64 `json:"data_ref,omitempty"`
	HasDataRef bool   `json:"has_data_ref,omitempty"`
	Samples    uint64 `json:"samples"`
	// Percent is of Annotation.Total.
	Percent float64 `json:"percent"`
	// Focus is the part of Samples in the focused inlined function (Annotation.Focus).
	Focus uint64 `json:"focus,omitempty"`
	// Counters are what the counters counted in the instruction's samples, in the order
	// of Annotation.Counters.
	Counters []uint64 `json:"counters,omitempty"`
	// Heat is 0 without samples, else 1..8 scaled to the hottest instruction.
	Heat      int      `json:"heat"`
	Label     string   `json:"label,omitempty"`      // "L1", ... where a branch of the function jumps here
	JumpFrom  []uint64 `json:"jump_from,omitempty"`  // the branches of the function that jump here
	JumpLabel string   `json:"jump_label,omitempty"` // the label a branch within the function jumps to
	Backward  bool     `json:"backward,omitempty"`   // a branch to itself or before (a loop edge)
	Display   string   `json:"display"`              // Text as rendered: labels and names for targets
	Block     int      `json:"block"`                // index in SourceBlocks (-1 without line information)
}

// CodeGap is a range of the function's addresses whose bytes were not captured, and why.
type CodeGap struct {
	Start   uint64 `json:"start"`
	End     uint64 `json:"end"` // first address after the gap
	Why     string `json:"why"`
	Samples uint64 `json:"samples,omitempty"` // that landed in the gap (counted in Total)
	Before  int    `json:"before"`            // index in Insts of the first instruction after the gap
}

// SourceBlock is a run of consecutive instructions from the same source line (and inline
// chain).
type SourceBlock struct {
	File        string   `json:"file"`
	Line        int      `json:"line"`
	Text        string   `json:"text,omitempty"` // the source line, if available
	InlineChain []string `json:"inline_chain,omitempty"`
	First       int      `json:"first"` // index of the first instruction
	Last        int      `json:"last"`  // index of the last instruction
	Samples     uint64   `json:"samples"`
	Percent     float64  `json:"percent"`
	// Counters are what the counters counted in the block's samples.
	Counters []uint64 `json:"counters,omitempty"`
}

// LineStat is the total of one source line over the function.
type LineStat struct {
	File    string  `json:"file"`
	Line    int     `json:"line"`
	Samples uint64  `json:"samples"`
	Percent float64 `json:"percent"`
}

// CodeVersion is one piece of a function's code.
type CodeVersion struct {
	Index   int      `json:"index"` // 1-based
	Start   uint64   `json:"start"`
	Size    uint64   `json:"size"`
	LoadSec *float64 `json:"load_sec,omitempty"` // load time, seconds from the run's start (JIT code)
	Samples uint64   `json:"samples"`
	Percent float64  `json:"percent"` // of the function's samples
	Error   string   `json:"error,omitempty"`
}

// InlinedTarget describes an inlined target: its samples are marked in the code of the
// function it was inlined into.
type InlinedTarget struct {
	Func    string `json:"func"`
	Into    string `json:"into"`
	Samples uint64 `json:"samples"` // of the target, in the annotated version
}

// AnnotateMatch is another function matching the target.
type AnnotateMatch struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Samples uint64 `json:"samples"`
}

// ConvertSlice converts each of ms with f, nil kept apart from empty, for the conversions
// that live beside their model rather than in api (query.AnnotateDoc).
func ConvertSlice[M, W any](ms []M, f func(M) W) []W { return wireSlice(ms, f) }

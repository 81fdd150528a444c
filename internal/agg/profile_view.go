package agg

// What the rows of a view (and the nodes of a flame graph) stand for.
const (
	ByFunction = "function"
	ByLine     = "line"    // a source line of a function: file:line
	ByAddress  = "address" // an instruction address
	ByImage    = "image"   // an image (executable, library, [kernel.kallsyms], [jit])
)

// Granularities lists the values of Granularity.By, in the order they are documented.
var Granularities = []string{ByFunction, ByLine, ByAddress, ByImage}

// Granularity says what a view counts.
type Granularity struct {
	By string `json:"by,omitempty" param:"by"` // ByFunction (or ""), ByLine, ByAddress or ByImage
	// NoInline counts each machine frame as the function its code belongs to, the way perf
	// report and pprof -noinlines count: functions inlined into it get no frames, no rows and
	// no samples of their own. Without it, a sample's self goes to the innermost function
	// inlined at its address, and each inlined function is a frame of its own.
	NoInline bool `json:"no_inline,omitempty" param:"inline,negated"`
	// Short names native functions without their C++ parameter lists and template
	// arguments (see views.ShortName); functions whose short names are the same are
	// counted as one.
	Short bool `json:"short,omitempty" param:"short"`
}

// IsZero says whether g is a view's default: functions, inlined ones included, full names.
func (g Granularity) IsZero() bool {
	return (g.By == "" || g.By == ByFunction) && !g.NoInline && !g.Short
}

// ValidGranularity says whether by names a granularity.
func ValidGranularity(by string) bool {
	for _, g := range Granularities {
		if by == g {
			return true
		}
	}
	return false
}

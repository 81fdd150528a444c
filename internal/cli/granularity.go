package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stax-profiler/stax/internal/agg"
)

// granularityHelp ends the help of the commands that take --by, --inline and --short.
const granularityHelp = `

--by says what a row is: each function (the default), each source line of a function
(line: FILE:LINE, where debug info gives one; a caller's line is that of its call), each
instruction address (address: a caller's is its call instruction), or each image
(executable, library, [kernel.kallsyms], [jit]). --inline, the default, counts a function
inlined into another as a function of its own: a sample's self goes to the innermost
function inlined where it landed. --no-inline counts each machine frame as the function
its code belongs to, as perf report and pprof -noinlines do: inlined functions get no rows,
their samples go to the function they were inlined into. --short names C++ functions
without their parameter lists and template arguments (ns::Class<T>::method(int) is
ns::Class::method); functions whose short names are the same are counted together.`

// granularityFlags are --by (on commands where it is given here), --inline, --no-inline and
// --short.
type granularityFlags struct {
	by               string
	inline, noInline bool
	short            bool
}

func (f *granularityFlags) add(c *cobra.Command, by bool) {
	if by {
		c.Flags().StringVar(&f.by, "by", agg.ByFunction, "a row per `function`, line (file:line), address or image")
	}
	c.Flags().BoolVar(&f.inline, "inline", true, "count inlined functions as functions of their own (the default)")
	c.Flags().BoolVar(&f.noInline, "no-inline", false, "count each frame as the function its code belongs to, as perf report does")
	c.Flags().BoolVar(&f.short, "short", false, "C++ names without parameter lists and template arguments")
}

// get checks the flags and returns the granularity they ask for; others are the values of
// --by that are not granularities but the command takes (top's process).
func (f *granularityFlags) get(c *cobra.Command, others ...string) (agg.Granularity, error) {
	if c.Flags().Changed("inline") && f.inline && f.noInline {
		return agg.Granularity{}, usageErr("--inline and --no-inline contradict each other: give one")
	}
	g := agg.Granularity{By: f.by, NoInline: f.noInline || !f.inline, Short: f.short}
	if g.By == "" {
		g.By = agg.ByFunction
	}
	ok := agg.ValidGranularity(g.By)
	for _, o := range others {
		ok = ok || g.By == o
	}
	if !ok {
		values := "function, line, address or image"
		if len(others) > 0 {
			values = "function, line, address, image or " + others[0]
		}
		return g, usageErr("--by must be %s, not %q", values, g.By)
	}
	return g, nil
}

// granularityText describes an answer's granularity for headers.
func granularityText(by string, noInline, short bool) string {
	s := ""
	if by != "" && by != agg.ByFunction {
		s += " · by " + by
	}
	if noInline {
		s += " · inlined functions counted in their callers"
	}
	if short {
		s += " · short names"
	}
	return s
}

// rowName is a row's name for text: a function (with its inlined mark and location, see
// funcName), FILE:LINE and the function for a row by line, the address and the function for
// a row by address, the image for a row by image.
func rowName(by, fn string, inlined bool, file string, line int, addr uint64) string {
	switch by {
	case agg.ByLine:
		name := esc(fn)
		if inlined {
			name += " (inlined)"
		}
		return fmt.Sprintf("%s  %s", sourceLine(file, line), name)
	case agg.ByAddress:
		name := esc(fn)
		if inlined {
			name += " (inlined)"
		}
		if file != "" && line > 0 {
			name += " (" + sourceLine(file, line) + ")"
		}
		return fmt.Sprintf("%#x  %s", addr, name)
	case agg.ByImage:
		return esc(trimBrackets(fn))
	}
	return funcName(fn, inlined, file, line)
}

// sourceLine is FILE:LINE for text, the file by its base name (as perf's srcline); ? stands
// for what debug info did not give.
func sourceLine(file string, line int) string {
	f, l := "?", "?"
	if file != "" {
		f = esc(filepath.Base(file))
	}
	if line > 0 {
		l = fmt.Sprint(line)
	}
	return f + ":" + l
}

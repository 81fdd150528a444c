package query

import (
	"fmt"
	"regexp"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/views"
)

// maxUnder bounds the path of a subtree asked for: no stack is that deep.
const maxUnder = 4096

// flameShape is the call tree o asks of p: its pruning, orientation, subtree and sandwich.
func flameShape(p *agg.Profile, o FlameOptions) (views.FlameShape, error) {
	s := views.FlameShape{Depth: o.Depth, ThresholdPct: o.ThresholdPct, Inverted: o.Inverted, Under: o.Under}
	if len(o.Under) > maxUnder {
		return s, fmt.Errorf("under: a path of %d functions: give at most %d", len(o.Under), maxUnder)
	}
	if o.CallersOf != "" && o.CalleesOf != "" {
		return s, fmt.Errorf("callers_of and callees_of: give one of them (a sandwich's two sides are two trees)")
	}
	for _, side := range []struct {
		name, expr string
		set        *[]bool
	}{{"callers_of", o.CallersOf, &s.CallersOf}, {"callees_of", o.CalleesOf, &s.CalleesOf}} {
		if side.expr == "" {
			continue
		}
		re, err := regexp.Compile(side.expr)
		if err != nil {
			return s, fmt.Errorf("%s %q is not a regular expression (%s): write one in Go's syntax, as pprof's", side.name, side.expr, reError(err))
		}
		m := make([]bool, len(p.Frames))
		for id := range p.Frames {
			m[id] = re.MatchString(p.Frames[id].Func)
		}
		*side.set = m
		s.Inverted = false
	}
	return s, nil
}

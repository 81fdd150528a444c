package views

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// callString renders callers (or callees) as "fn total/self: row total/self pct, ... | outermost".
func callString(fs []CallFunction) []string {
	var out []string
	for _, f := range fs {
		var rows []string
		for _, r := range f.Rows {
			rows = append(rows, fmt.Sprintf("%s %d/%d %.1f%%", r.Func, r.Total, r.Self, r.Pct))
		}
		s := fmt.Sprintf("%s %d/%d: %s", f.Func, f.Total, f.Self, strings.Join(rows, ", "))
		if f.Outermost > 0 {
			s += fmt.Sprintf(" | outermost %d", f.Outermost)
		}
		out = append(out, s)
	}
	return out
}

func TestCallers(t *testing.T) {
	named := func(expr string) func(agg.Frame) bool {
		re := regexp.MustCompile(expr)
		return func(f agg.Frame) bool { return re.MatchString(f.Func) }
	}
	tests := []struct {
		name     string
		match    string
		filter   Filter
		maxFuncs int
		maxRows  int
		callees  bool
		want     []string
		samples  uint64
	}{
		{
			// main>b>a>b>c: b recurses through a; its caller is main, above its outermost
			// appearance, and the sample counts once.
			name: "callers of b", match: "^b$",
			want:    []string{"b 64/50: a 50/50 78.1%, main 14/0 21.9%"},
			samples: 108,
		},
		{
			// Below b's innermost appearance: c in main>b>a>b>c; b's own 50 make up the rest.
			name: "callees of b", match: "^b$", callees: true,
			want:    []string{"b 64/50: malloc 8/0 12.5%, c 6/6 9.4%"},
			samples: 108,
		},
		{
			name: "a recursive function is not its own caller", match: "rec",
			want:    []string{"rec 10/10: main 10/10 100.0%"},
			samples: 108,
		},
		{
			name: "nor its own callee", match: "rec", callees: true,
			want:    []string{"rec 10/10: "},
			samples: 108,
		},
		{
			name: "the outermost function has no caller", match: "^main$",
			want:    []string{"main 108/0:  | outermost 108"},
			samples: 108,
		},
		{
			name: "every match, hottest first", match: "malloc",
			want: []string{
				"_int_malloc 12/4: malloc 8/0 66.7%, cb 4/4 33.3%",
				"malloc 12/0: b 8/0 66.7%, a 4/0 33.3%",
				"sysmalloc 8/8: _int_malloc 8/8 100.0%",
			},
			samples: 108,
		},
		{
			name: "at most maxFuncs functions, maxRows rows", match: "malloc", maxFuncs: 2, maxRows: 1,
			want:    []string{"_int_malloc 12/4: malloc 8/0 66.7%", "malloc 12/0: b 8/0 66.7%"},
			samples: 108,
		},
		{
			name: "one thread", match: "^b$", filter: Filter{Tid: 2},
			want:    []string{"b 6/0: main 6/0 100.0%"},
			samples: 21,
		},
		{
			name: "no match", match: "nothing",
			samples: 108,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs, samples := Callers(transformProfile(), tc.filter, named(tc.match), tc.maxFuncs, tc.maxRows, tc.callees)
			if got := callString(fs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if samples != tc.samples {
				t.Errorf("samples = %d, want %d", samples, tc.samples)
			}
		})
	}
}

// TestCallersAddUp: each sample gives a function one caller or none (it is outermost), and
// one callee or none (it is the leaf), recursion or not: the rows add up to the total.
func TestCallersAddUp(t *testing.T) {
	p := transformProfile()
	all := func(agg.Frame) bool { return true }
	for _, callees := range []bool{false, true} {
		fs, _ := Callers(p, Filter{}, all, 0, 0, callees)
		for _, f := range fs {
			sum := f.Outermost
			if callees {
				sum += f.Self
			}
			for _, r := range f.Rows {
				sum += r.Total
			}
			if sum != f.Total {
				t.Errorf("callees %v: %s: rows add up to %d, total %d", callees, f.Func, sum, f.Total)
			}
		}
	}
}

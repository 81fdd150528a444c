package query

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// CompileTransform checks a query's stack transform and compiles its regular expressions.
// It returns nil for a transform that rewrites nothing.
func CompileTransform(t api.Transform) (*views.Transform, error) {
	if t.IsZero() {
		return nil, nil
	}
	out := &views.Transform{FoldRecursion: t.FoldRecursion, Python: t.Python}
	for _, c := range []struct {
		flag, expr string
		re         **regexp.Regexp
	}{{"focus", t.Focus, &out.Focus}, {"ignore", t.Ignore, &out.Ignore}, {"hide", t.Hide, &out.Hide}} {
		if c.expr == "" {
			continue
		}
		re, err := regexp.Compile(c.expr)
		if err != nil {
			return nil, fmt.Errorf("--%s %q is not a regular expression (%s): write one in Go's syntax, as pprof's", c.flag, c.expr, reError(err))
		}
		*c.re = re
	}
	for _, img := range t.CollapseImage {
		if img == "" {
			return nil, errors.New("--collapse-image needs an image: its path, its file name (libc.so.6) or its name without brackets (kernel.kallsyms)")
		}
		out.CollapseImages = append(out.CollapseImages, img)
	}
	return out, nil
}

// reError is what is wrong with a regular expression, without the expression again.
func reError(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}

// ApplyTransform returns run with its stacks rewritten by t (run itself when t rewrites
// nothing), and t for the answer (nil when it rewrites nothing).
func ApplyTransform(run *store.Run, t api.Transform) (*store.Run, *api.Transform, error) {
	return applyTransform(run, t, 0)
}

// applyTransform is ApplyTransform of thread tid's samples alone (0: every thread).
func applyTransform(run *store.Run, t api.Transform, tid uint32) (*store.Run, *api.Transform, error) {
	at, err := CompileTransform(t)
	if err != nil || at == nil {
		return run, nil, err
	}
	out := *run
	out.Profile = *views.TransformedThread(&run.Profile, at, tid)
	desc := t
	desc.CollapseImage = slices.Clone(t.CollapseImage)
	return &out, &desc, nil
}

// view restricts run to a window, then rewrites its stacks: what every view is computed
// from. A view of one thread (tid, 0: every thread) rewrites that thread's stacks alone,
// and holds no other thread's samples.
func view(run *store.Run, w Window, t api.Transform, tid uint32) (*store.Run, *api.Window, *api.Transform, error) {
	if _, err := CompileTransform(t); err != nil {
		return nil, nil, nil, err
	}
	if w.IsAll() && t.IsZero() {
		return run, trimmedWindow(run), nil, nil
	}
	if t.IsZero() {
		tid = 0 // a window alone is cheap to share between the threads' views
	}
	return recentViews.get(run, w, t, tid, func() (*store.Run, *api.Window, *api.Transform, error) { return computeView(run, w, t, tid) })
}

func computeView(run *store.Run, w Window, t api.Transform, tid uint32) (*store.Run, *api.Window, *api.Transform, error) {
	run, win, err := w.Apply(run)
	if err != nil {
		return nil, nil, nil, err
	}
	run, tr, err := applyTransform(run, t, tid)
	if err != nil {
		return nil, nil, nil, err
	}
	return run, win, tr, nil
}

// FunctionMatcher accepts the frames whose function name contains fn in any case, or that
// fn matches as a regular expression (Go's syntax, as pprof's) when it is one.
func FunctionMatcher(fn string) func(agg.Frame) bool {
	lower := strings.ToLower(fn)
	re, err := regexp.Compile(fn)
	if err != nil {
		re = nil
	}
	return func(f agg.Frame) bool {
		return strings.Contains(strings.ToLower(f.Func), lower) || re != nil && re.MatchString(f.Func)
	}
}

package query

import (
	"errors"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

func run(finished bool) *store.Run {
	r := &store.Run{
		Meta: store.Meta{ID: "r", Finished: finished, Samples: 30},
		Profile: agg.Profile{
			Frames:  []agg.Frame{{Func: "main", Kind: agg.KindUser}, {Func: "hot", Kind: agg.KindUser}},
			Stacks:  [][]uint32{{1, 0}, {0}},
			Entries: []agg.Entry{{Tid: 1, Stack: 0, Count: 20, LeafFunc: 1}, {Tid: 2, Stack: 1, Count: 10, LeafFunc: 0}},
			Threads: []agg.ThreadInfo{{Tid: 1, Name: "a"}, {Tid: 2, Name: "b"}},
		},
	}
	r.Profile.LocateFrameStacks()
	return r
}

func TestAnswersSayTheStoredState(t *testing.T) {
	for _, finished := range []bool{true, false} {
		want := api.StateStored
		if !finished {
			want = api.StateCrashed
		}
		r := run(finished)
		top, _ := Top(r, TopOptions{N: 5})
		fl, _ := Flame(r, FlameOptions{Depth: 5})
		th, _ := Threads(r, 5, Window{}, api.Transform{})
		for name, got := range map[string]string{"top": top.State, "flame": fl.State, "threads": th.State} {
			if got != want {
				t.Errorf("finished=%v: %s state %q, want %q", finished, name, got, want)
			}
		}
		if top.Live || fl.Live || th.Live {
			t.Errorf("an answer from the store says live")
		}
		if len(top.Rows) != 2 || top.Rows[0].Func != "hot" || top.Rows[0].Self != 20 {
			t.Errorf("top rows %+v", top.Rows)
		}
	}
}

func TestTopOfOneThread(t *testing.T) {
	top, _ := Top(run(true), TopOptions{N: 5, Tid: 2})
	if top.Samples != 10 || len(top.Rows) != 1 || top.Rows[0].Func != "main" {
		t.Errorf("top --tid 2: %+v", top)
	}
	if none, _ := Top(run(true), TopOptions{N: 5, Tid: 99}); none.Samples != 0 {
		t.Errorf("top of an unknown thread has %d samples", none.Samples)
	}
}

func TestAnnotateWithoutMatch(t *testing.T) {
	for _, target := range []string{"no_such_function", "0x10"} {
		if _, err := Annotate(run(true), AnnotateOptions{Target: target}); !errors.Is(err, ErrNoMatch) {
			t.Errorf("annotate %s: %v, want ErrNoMatch", target, err)
		}
	}
}

// A run without samples (a live run whose threads have not run yet): a thread that
// matches nothing and an empty window are said as such, before what the run lacks, so
// that their exit codes do not depend on whether a sample came in time.
func TestSelectionErrorsBeforeNoSamples(t *testing.T) {
	run := &store.Run{Meta: store.Meta{ID: "empty"}}
	_, err := Timeline(run, TimelineOptions{Tid: 999})
	if !errors.Is(err, ErrNoMatch) {
		t.Errorf("timeline --tid of a run without samples: %v, want a selection matching nothing", err)
	}
	_, _, err = Window{From: "3", To: "2"}.bounds(run)
	if err == nil || errors.Is(err, ErrNotRecorded) || !strings.Contains(err.Error(), "the window is empty") {
		t.Errorf("--from 3 --to 2 of a run without samples: %v, want the window's error", err)
	}
	if _, _, err = (Window{From: "2", To: "3"}).bounds(run); !errors.Is(err, ErrNotRecorded) {
		t.Errorf("--from 2 --to 3 of a run without samples: %v, want what it lacks", err)
	}
	if _, err = Timeline(run, TimelineOptions{}); !errors.Is(err, ErrNotRecorded) {
		t.Errorf("timeline of a run without samples: %v, want what it lacks", err)
	}
}

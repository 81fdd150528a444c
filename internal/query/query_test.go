package query

import (
	"errors"
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

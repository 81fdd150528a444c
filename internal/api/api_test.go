package api

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stax-profiler/stax/internal/store"
)

func TestStateOf(t *testing.T) {
	if s := StateOf(store.Meta{Finished: true}); s != StateStored {
		t.Errorf("finished run: %q", s)
	}
	if s := StateOf(store.Meta{}); s != StateCrashed {
		t.Errorf("unfinished run read from the store: %q", s)
	}
}

// TestKeysAreSnakeCase: every key of every document is snake_case (schema 2).
func TestKeysAreSnakeCase(t *testing.T) {
	camel := regexp.MustCompile(`"[a-z0-9_]*[A-Z][A-Za-z0-9_]*":`)
	for _, v := range []any{Status{Processes: []ProcessStatus{{}}}, Top{}, Flame{}, Threads{}, Wait{}, List{Runs: []RunInfo{{}}}, Error{}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if m := camel.Find(b); m != nil {
			t.Errorf("%T has key %s", v, m)
		}
	}
}

package api

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/resolve"
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
	for _, v := range []any{Status{Processes: []ProcessStatus{{}}}, Top{Transform: &Transform{FoldRecursion: true, CollapseImage: []string{"x"}}}, Flame{}, Threads{}, Callers{Functions: []CallFunction{{Rows: []CallRow{{}}}}}, Timeline{}, Wait{}, List{Runs: []RunInfo{{}}}, Error{}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if m := camel.Find(b); m != nil {
			t.Errorf("%T has key %s", v, m)
		}
	}
}

func TestSocketDirMustBePrivate(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	os.MkdirAll(filepath.Join(home, "live"), 0o755)
	os.Chmod(filepath.Join(home, "live"), 0o755)
	if _, err := SocketDir(); err == nil || !strings.Contains(err.Error(), "not a private directory") {
		t.Errorf("a world-readable socket directory was accepted: %v", err)
	}
}

// TestAnonImage: StatusOf counts frames of resolve's anonymous image as unnamed JIT code.
func TestAnonImage(t *testing.T) {
	if agg.AnonImage != resolve.ImageAnon {
		t.Errorf("agg.AnonImage is %q, resolve.ImageAnon %q", agg.AnonImage, resolve.ImageAnon)
	}
}

func TestTransformParamsRoundTrip(t *testing.T) {
	want := Transform{Focus: "a|b", Ignore: "^c$", Hide: "d", CollapseImage: []string{"libc.so.6", "[kernel.kallsyms]"}, FoldRecursion: true}
	q := url.Values{}
	want.AddParams(q)
	var got Transform
	if err := DecodeParams(q, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parameters %v read back as %+v (%v), want %+v", q, got, err, want)
	}
	q = url.Values{}
	(&Transform{}).AddParams(q)
	if len(q) != 0 {
		t.Errorf("a zero transform sets parameters %v", q)
	}
	got = Transform{}
	if err := DecodeParams(q, &got); err != nil || !got.IsZero() {
		t.Errorf("no parameters read as %+v (%v)", got, err)
	}
}

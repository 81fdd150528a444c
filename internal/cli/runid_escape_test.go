package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
)

// craftedID is a run id a crafted saved file could carry: it retitles the terminal, breaks
// the line and reverses the text after it (U+202E).
const (
	craftedID        = "run\x1b]0;pwned\x07\nx\u202eevil"
	craftedIDEscaped = `run\x1b]0;pwned\x07\x0ax\u202eevil`
)

// checkNoBidi fails if out holds a bidirectional control character.
func checkNoBidi(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Errorf("%s: output holds %U:\n%q", what, r, out)
			return
		}
	}
}

// TestCraftedRunIDEscaped: a run id from a crafted stax open file is printed escaped by
// open, list, status and top (list keeps one line per run), and a bidi control in a
// function's or file's name is escaped in top.
func TestCraftedRunIDEscaped(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	r := fixtureRun(craftedID, true)
	r.Profile.Frames[2].Func = "jit\u202eloop"
	r.Profile.Frames[2].File = "lo\u2067ops.toy"
	file := filepath.Join(t.TempDir(), "crafted.stax")
	if err := store.Save(file, r); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"open", file}, {"list"}, {"status", "--run", craftedID}, {"top", "--run", craftedID}} {
		var out, errOut bytes.Buffer
		code := Main(args, &out, &errOut)
		what := args[0]
		if code != 0 {
			t.Fatalf("stax %s: exit %d: %s", what, code, errOut.String())
		}
		checkPrintable(t, what, out.String()+errOut.String())
		checkNoBidi(t, what, out.String()+errOut.String())
		if what != "top" && !strings.Contains(out.String(), craftedIDEscaped) {
			t.Errorf("stax %s does not show the escaped id %s:\n%s", what, craftedIDEscaped, out.String())
		}
		if what == "list" {
			if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 {
				t.Errorf("list printed %d lines for one run:\n%s", len(lines), out.String())
			}
		}
		if what == "top" && !strings.Contains(out.String(), `jit\u202eloop (lo\u2067ops.toy:`) {
			t.Errorf("top does not show the escaped bidi names:\n%s", out.String())
		}
	}
}

// TestCraftedRunIDInJSON: JSON output keeps the crafted id and names exact, with the
// control and bidi characters as \u escapes (encoding/json leaves U+202E raw).
func TestCraftedRunIDInJSON(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	r := fixtureRun(craftedID, true)
	r.Profile.Frames[2].Func = "jit\u202eloop\u2069"
	if err := store.Save(store.Path(craftedID), r); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"top", "--run", craftedID, "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("top --json: exit %d: %s", code, errOut.String())
	}
	checkPrintable(t, "top --json", out.String())
	checkNoBidi(t, "top --json", out.String())
	if !strings.Contains(out.String(), `jit\u202eloop\u2069`) {
		t.Errorf("top --json does not escape the bidi controls:\n%s", out.String())
	}
	var top api.Top
	if err := json.Unmarshal(out.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range top.Rows {
		found = found || row.Func == "jit\u202eloop\u2069"
	}
	if top.Run != craftedID || !found {
		t.Errorf("top --json: run %q, rows %+v; want the exact id and name back", top.Run, top.Rows)
	}
}

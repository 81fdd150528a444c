package e2e

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// setGoVersion rewrites, in place, the Go version in the .go.buildinfo section of the Go
// binary at path: its "go1." becomes prefix, of the same length.
func setGoVersion(t *testing.T, path, prefix string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Section(".go.buildinfo")
	f.Close()
	if s == nil || s.Offset+64 > uint64(len(b)) {
		t.Fatalf("%s: no .go.buildinfo section", path)
	}
	hdr := b[s.Offset:]
	n, k := binary.Uvarint(hdr[32:])
	v := hdr[32+k : 32+k+int(n)]
	if !strings.HasPrefix(string(v), "go1.") || len(prefix) != len("go1.") {
		t.Fatalf("%s: Go version %q", path, v)
	}
	copy(v, prefix)
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A stripped Go binary claiming a Go version whose runtime layout stax does not know: its
// functions are named, without the inline functions the tree would give (main.mix), and a
// note of the run says so, with the count.
func TestStrippedGoBinaryUnknownVersion(t *testing.T) {
	testutil.RequirePerf(t)
	e := newEnv(t)
	prog := filepath.Join(t.TempDir(), "goprog")
	testutil.Run(t, filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/goprog"), "go", "build", "-ldflags=-s -w", "-o", prog, ".")
	setGoVersion(t, prog, "go0.")
	if out, errOut, code := e.run("record", "-q", "--", prog, "300ms"); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
	}
	var top api.Top
	e.mustJSON(&top, "top", "-n", "50", "--sort", "total")
	if _, total, ok := row(top, "main.hotLoop"); !ok || total < 50 {
		t.Errorf("main.hotLoop not named: %+v", top.Rows)
	}
	for _, r := range top.Rows {
		if r.Func == "main.mix" {
			t.Errorf("an inline frame from a tree not trusted: %+v", r)
		}
	}
	var st api.Status
	e.mustJSON(&st, "status")
	found := false
	for _, n := range st.Meta.Notes {
		if strings.HasPrefix(n, "Go frames of "+prog+" at ") && strings.Contains(n, `built with "go0.`) &&
			strings.HasSuffix(n, "without inline functions") {
			found = true
			t.Logf("note: %s", n)
		}
	}
	if !found {
		t.Errorf("no note says the inline functions of %s were left out: %q", prog, st.Meta.Notes)
	}
}

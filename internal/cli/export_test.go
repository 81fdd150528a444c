package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/store"
)

// TestExport runs stax export in every format over a stored fixture run.
func TestExport(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", "")
	r := fixtureRun("20261101-120000-100", true)
	if err := store.Save(store.Path(r.Meta.ID), r); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)

	for _, c := range []struct{ format, file string }{
		{"pprof", "20261101-120000-100.pb.gz"},
		{"firefox", "20261101-120000-100.json"},
		{"speedscope", "20261101-120000-100.speedscope.json"},
		{"folded", "20261101-120000-100.folded"},
		{"svg", "20261101-120000-100.svg"},
	} {
		var out, errOut bytes.Buffer
		if code := Main([]string{"export", "--format", c.format}, &out, &errOut); code != 0 {
			t.Fatalf("export %s: exit %d: %s", c.format, code, errOut.String())
		}
		if !strings.Contains(out.String(), c.file) || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("export %s said %q", c.format, out.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		switch c.format {
		case "pprof":
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("pprof: %v", err)
			}
			if _, err := io.ReadAll(zr); err != nil {
				t.Fatalf("pprof: %v", err)
			}
		case "firefox", "speedscope":
			if !json.Valid(b) {
				t.Errorf("%s: not JSON", c.format)
			}
		case "folded":
			if !strings.Contains(string(b), "main;run_jit;jitted_func1_[j] 500\n") {
				t.Errorf("folded:\n%s", b)
			}
		case "svg":
			dec := xml.NewDecoder(bytes.NewReader(b))
			for {
				if _, err := dec.Token(); err == io.EOF {
					break
				} else if err != nil {
					t.Fatalf("svg: %v", err)
				}
			}
		}
	}

	// -o - writes to stdout and says nothing else; -o names the file.
	var out, errOut bytes.Buffer
	if code := Main([]string{"export", "--format", "folded", "-o", "-"}, &out, &errOut); code != 0 || errOut.Len() != 0 ||
		!strings.HasPrefix(out.String(), "main;") {
		t.Errorf("-o -: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	// The stack transforms rewrite what is written.
	out.Reset()
	if code := Main([]string{"export", "--format", "folded", "-o", "-", "--focus", "run_jit", "--hide", "jitted_func2", "--ignore", "mix"}, &out, &errOut); code != 0 ||
		out.String() != "run_jit 990\nrun_jit;asm_exc_page_fault_[k] 10\nrun_jit;jitted_func1_[j] 500\n" {
		t.Errorf("export with transforms: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := Main([]string{"export", "-f", "svg", "-o", "flame.svg", "--run", r.Meta.ID}, &out, &errOut); code != 0 {
		t.Fatalf("-o flame.svg: exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "flame.svg")); err != nil {
		t.Error(err)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", "--format", "perf"}, 2, "pprof, firefox, speedscope, folded, svg"},
		{[]string{"export"}, 2, "--format is required"},
		{[]string{"export", "-f", "pprof", "--run", "20990101-000000-1"}, 5, ""},
	} {
		var out, errOut bytes.Buffer
		code := Main(c.args, &out, &errOut)
		if code != c.code || !strings.Contains(errOut.String(), c.want) || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("stax %v: exit %d, stderr %q; want exit %d and one line with %q", c.args, code, errOut.String(), c.code, c.want)
		}
	}
	// No temporary files are left behind.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind %s", e.Name())
		}
	}
}

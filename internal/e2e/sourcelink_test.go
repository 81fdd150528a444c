package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// A JIT run by an unprivileged user whose debug info names a symbolic link, in a directory
// it can read, to a file only root can read (0600, or 0644 in a directory only root can
// search): neither annotate nor save, run as root, shows a line of it. A link to a file
// the user can read shows its lines.
func TestAnnotateSourceThroughLink(t *testing.T) {
	testutil.RequirePerf(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and setpriv (util-linux) to run the JIT as another user")
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	toy := filepath.Join(dir, "toyjit")
	testutil.Run(t, testutil.RepoRoot(t), "go", "build", "-o", toy, "./examples/toyjit")

	// Each file has the toy's line count, so that every line the debug info names exists.
	text := func(word string) string {
		var b strings.Builder
		for i := 1; i <= 20; i++ {
			b.WriteString(word + " line " + strconv.Itoa(i) + "\n")
		}
		return b.String()
	}
	private := filepath.Join(dir, "private")
	os.Mkdir(private, 0o700)
	os.Chmod(private, 0o700)
	write := func(p, word string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(text(word)), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
	}
	write(filepath.Join(private, "hidden.toy"), "ROOTONLY", 0o644)
	write(filepath.Join(dir, "shadow.toy"), "ROOTONLY", 0o600)
	write(filepath.Join(dir, "public.toy"), "PUBLIC", 0o644)
	for link, target := range map[string]string{
		"hidden-link.toy": filepath.Join(private, "hidden.toy"),
		"shadow-link.toy": "shadow.toy",
		"public-link.toy": "public.toy",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}

	// The toy writes its dump in a directory of its user's: one left in /tmp by a failed
	// run would make a later root process of the same pid refuse to write its own.
	jitDir := filepath.Join(dir, "jit")
	if err := os.Mkdir(jitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(jitDir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		link string
		show bool
	}{{"hidden-link.toy", false}, {"shadow-link.toy", false}, {"public-link.toy", true}} {
		t.Run(tc.link, func(t *testing.T) {
			source := filepath.Join(dir, tc.link)
			e := newEnv(t)
			if out, errOut, code := e.run("record", "-q", "--", setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
				toy, "-cpu", "300ms", "-source", source, "-dir", jitDir); code != 0 {
				t.Fatalf("record: exit %d\n%s%s", code, out, errOut)
			}
			var st api.Status
			e.mustJSON(&st, "status")
			out, errOut, code := e.run("annotate", "jitted_func2")
			if code != 0 || !strings.Contains(out, "add") {
				top, _, _ := e.run("top", "-n", "10")
				t.Fatalf("annotate: exit %d, no code shown\n%s%s\ntop:\n%s", code, out, errOut, top)
			}
			if strings.Contains(out+errOut, "ROOTONLY") {
				t.Errorf("annotate shows lines of a file only root can read:\n%s%s", out, errOut)
			}
			if tc.show && !strings.Contains(out, "PUBLIC line 14") {
				t.Errorf("annotate does not show the readable file's lines:\n%s%s", out, errOut)
			}
			if !tc.show && !strings.Contains(out, "note: source not shown") {
				t.Errorf("annotate does not say why the source is not shown:\n%s", out)
			}

			file := filepath.Join(t.TempDir(), "run.stax")
			if out, errOut, code := e.run("save", file); code != 0 {
				t.Fatalf("save: exit %d\n%s%s", code, out, errOut)
			}
			run, err := store.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			var public int
			for _, c := range run.Code {
				for _, s := range c.Source {
					if strings.Contains(s.Text, "ROOTONLY") {
						t.Errorf("the saved run holds a line of a file only root can read: %+v", s)
					}
					if strings.Contains(s.Text, "PUBLIC") {
						public++
					}
				}
			}
			if tc.show && public == 0 {
				t.Errorf("the saved run holds no line of the readable file")
			}
		})
	}
}

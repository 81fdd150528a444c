package symbol

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stax-profiler/stax/internal/symbol/elfsym"
	"github.com/stax-profiler/stax/internal/testutil"
)

// TestMiniDebugInfo builds a stripped program carrying its local function symbols in an
// xz-compressed .gnu_debugdata section, as Fedora ships binaries, and names a static
// function that no other table has.
func TestMiniDebugInfo(t *testing.T) {
	for _, tool := range []string{"gcc", "objcopy", "strip", "xz"} {
		testutil.RequireTool(t, tool)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "p.c")
	os.WriteFile(src, []byte(`
static volatile int sink;
__attribute__((noinline)) static void hidden_helper(int n) { for (int i = 0; i < n; i++) sink += i; }
int main(int argc, char **argv) { (void)argv; hidden_helper(argc * 1000); return 0; }
`), 0o644)
	prog := filepath.Join(dir, "p")
	mini := filepath.Join(dir, "mini")
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("gcc", "-O1", "-o", prog, src)
	orig, err := elfsym.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	var addr uint64
	for _, s := range orig.Symbols() {
		if s.Name == "hidden_helper" {
			addr = s.Addr + 1
		}
	}
	if addr == 0 {
		t.Fatal("hidden_helper not in the unstripped program")
	}
	run("objcopy", "--only-keep-debug", prog, mini)
	run("objcopy", "--strip-debug", mini)
	run("xz", "-k", mini)
	run("strip", "--strip-all", prog)
	run("objcopy", "--add-section", ".gnu_debugdata="+mini+".xz", prog)

	c := NewCache(Options{NoDebugFiles: true})
	im, err := c.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := im.Symbol(addr); !ok || s.Name != "hidden_helper" {
		t.Errorf("Symbol(%#x) = %+v, %v; want hidden_helper from .gnu_debugdata", addr, s, ok)
	}
	// A damaged section is an error for that image's extra symbols, not for the image.
	bad := filepath.Join(dir, "bad")
	os.WriteFile(filepath.Join(dir, "junk.xz"), []byte("not xz at all"), 0o644)
	run("cp", prog, bad)
	run("objcopy", "--remove-section", ".gnu_debugdata", "--add-section", ".gnu_debugdata="+filepath.Join(dir, "junk.xz"), bad)
	im2, err := NewCache(Options{NoDebugFiles: true}).Open(bad)
	if err != nil || im2.DebugErr == nil {
		t.Errorf("damaged .gnu_debugdata: open error %v, DebugErr %v; want the image with a note", err, im2.DebugErr)
	}
}

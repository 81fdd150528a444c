package symbol

import (
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
	"github.com/stax-profiler/stax/internal/vdso"
)

// TestOpenMemory loads an image from bytes, as the vdso is: its functions are named, the
// same bytes give the same image, and bytes that are not ELF an error rather than a panic.
func TestOpenMemory(t *testing.T) {
	data, err := vdso.Self()
	if err != nil {
		testutil.Require(t, testutil.EnvPerf, "no vdso here: %v", err)
	}
	c := NewCache(Options{NoDebugFiles: true})
	im, err := c.OpenMemory(vdso.Name, data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.OpenMemory(vdso.Name, append([]byte(nil), data...))
	if err != nil || again != im {
		t.Errorf("the same bytes loaded twice: %p then %p (%v)", im, again, err)
	}
	found := false
	for _, s := range im.ELF().Symbols() {
		if strings.HasSuffix(s.Name, "clock_gettime") {
			loc := im.Locate(s.Addr + s.Size/2)
			found = len(loc.Frames) == 1 && loc.Frames[0].Func == s.Name && loc.Symbol.Start == s.Addr
		}
	}
	if im.Path != vdso.Name || !found {
		t.Errorf("image %q: clock_gettime not named among %+v", im.Path, im.ELF().Symbols())
	}
	for _, bad := range [][]byte{nil, []byte("\x7fELF\x02\x01\x01"), []byte("not an image")} {
		if _, err := c.OpenMemory("[bad]", bad); err == nil {
			t.Errorf("OpenMemory(%q) loaded", bad)
		}
	}
}

package cli

import (
	"testing"

	"github.com/stax-profiler/stax/internal/api"
)

// TestSymbolsHint: status names the images holding more than 1% of the samples in code no
// symbol names, and what would name it; nothing when none does.
func TestSymbolsHint(t *testing.T) {
	lzma := api.ImageSamples{Image: "liblzma.so.5", Samples: 1234}
	vdso := api.ImageSamples{Image: "[vdso]", Samples: 500}
	small := api.ImageSamples{Image: "libc.so.6", Samples: 9}
	for _, c := range []struct {
		imgs  []api.ImageSamples
		total uint64
		want  string
	}{
		{nil, 1000, ""},
		{[]api.ImageSamples{small}, 1000, ""},
		{[]api.ImageSamples{lzma, small}, 2000, "liblzma.so.5: 1,234 samples in code without symbols; install its debug symbols (Debian: its -dbgsym package) or set DEBUGINFOD_URLS"},
		{[]api.ImageSamples{lzma, vdso, small}, 2000, "liblzma.so.5: 1,234, [vdso]: 500 samples in code without symbols; install their debug symbols (Debian: their -dbgsym packages) or set DEBUGINFOD_URLS"},
		{[]api.ImageSamples{vdso}, 2000, "[vdso]: 500 samples in code without symbols; the kernel's debug package names it (Debian: linux-image-*-dbg), or set DEBUGINFOD_URLS"},
		{[]api.ImageSamples{vdso}, 0, ""},
	} {
		if got := symbolsHint(c.imgs, c.total); got != c.want {
			t.Errorf("symbolsHint(%+v, %d) =\n  %q\nwant\n  %q", c.imgs, c.total, got, c.want)
		}
	}
}

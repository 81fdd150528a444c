package api

import (
	"fmt"
	"strings"

	"github.com/stax-profiler/stax/internal/numfmt"
)

// SymbolsHint says, in one line, which images hold more than 1% of the samples in code no
// symbol names, and what would name it; "" when none does. stax status prints it, and
// stax web's status strip shows it beside the unknown samples.
func SymbolsHint(imgs []ImageSamples, total uint64) string {
	var parts []string
	kernel := true
	for _, im := range imgs {
		if total == 0 || im.Samples*100 <= total || len(parts) == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %s", im.Image, numfmt.Commas(im.Samples)))
		kernel = kernel && im.Image == "[vdso]"
	}
	if len(parts) == 0 {
		return ""
	}
	what := "install its debug symbols (Debian: its -dbgsym package) or set DEBUGINFOD_URLS"
	switch {
	case kernel:
		what = "the kernel's debug package names it (Debian: linux-image-*-dbg), or set DEBUGINFOD_URLS"
	case len(parts) > 1:
		what = "install their debug symbols (Debian: their -dbgsym packages) or set DEBUGINFOD_URLS"
	}
	return strings.Join(parts, ", ") + " samples in code without symbols; " + what
}

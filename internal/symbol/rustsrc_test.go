package symbol

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRustSrcRemap(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "library/core/src/iter/range.rs")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte("// range\n"), 0o644)
	r := &RustSrc{Find: func() string { return root }}
	const commit = "/rustc/90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf/"
	for in, want := range map[string]string{
		commit + "library/core/src/iter/range.rs": file,
		commit + "library/core/src/missing.rs":    commit + "library/core/src/missing.rs",
		commit + "library/../../etc/passwd":       commit + "library/../../etc/passwd",
		"/home/me/src/main.rs":                    "/home/me/src/main.rs",
		"/rustc/":                                 "/rustc/",
	} {
		if got := r.Remap(in); got != want {
			t.Errorf("Remap(%q) = %q, want %q", in, got, want)
		}
	}
	none := &RustSrc{Find: func() string { return "" }}
	if got := none.Remap(commit + "library/core/src/iter/range.rs"); got != commit+"library/core/src/iter/range.rs" {
		t.Errorf("without rust-src: %q", got)
	}
}

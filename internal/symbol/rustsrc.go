package symbol

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Rust's standard library is compiled with its sources remapped to /rustc/<commit>/...;
// RustSrc maps such paths into the local toolchain's rust-src component when it holds the
// file, so those frames show real source too.
type RustSrc struct {
	once sync.Once
	root string // the directory holding library/ (…/lib/rustlib/src/rust), "" if none
	// Find returns the root; by default $RUST_SRC_PATH's parent (it names .../library), else
	// `rustc --print sysroot`/lib/rustlib/src/rust.
	Find func() string
}

var defaultRustSrc RustSrc

// RemapRust maps a /rustc/<commit>/ path into the local rust-src, or returns p unchanged.
func RemapRust(p string) string { return defaultRustSrc.Remap(p) }

// Remap maps a /rustc/<commit>/ path into the local rust-src, or returns p unchanged.
func (r *RustSrc) Remap(p string) string {
	rest, ok := strings.CutPrefix(p, "/rustc/")
	if !ok {
		return p
	}
	_, rel, ok := strings.Cut(rest, "/") // drop the commit hash
	if !ok || strings.Contains(rel, "..") {
		return p
	}
	r.once.Do(func() {
		find := r.Find
		if find == nil {
			find = findRustSrc
		}
		r.root = find()
	})
	if r.root == "" {
		return p
	}
	local := filepath.Join(r.root, rel)
	if _, err := os.Stat(local); err != nil {
		return p
	}
	return local
}

func findRustSrc() string {
	if v := os.Getenv("RUST_SRC_PATH"); v != "" {
		return filepath.Dir(filepath.Clean(v))
	}
	rustc, err := exec.LookPath("rustc")
	if err != nil {
		return ""
	}
	out, err := exec.Command(rustc, "--print", "sysroot").Output()
	if err != nil {
		return ""
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "lib", "rustlib", "src", "rust")
	if _, err := os.Stat(filepath.Join(root, "library")); err != nil {
		return ""
	}
	return root
}

package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// PyenvPython returns the newest CPython minor (e.g. "3.12") that pyenv installed, else
// pythonMINOR on PATH, or "".
func PyenvPython(minor string) string {
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".pyenv")
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "versions", minor+".*"))
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		p := filepath.Join(dirs[i], "bin", "python"+minor)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath("python" + minor)
	return p
}

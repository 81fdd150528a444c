package jit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Marker files are found in the process's current directory and among its open files,
// ITT spans files among its open files.
func TestDiscoverSpanFiles(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	inCwd := filepath.Join(dir, "marker-"+strconv.Itoa(pid)+".txt")
	if err := os.WriteFile(inCwd, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	own := os.Getpid()
	other := t.TempDir()
	var held []string
	for _, name := range []string{"marker-" + strconv.Itoa(own) + "-7.txt", "itt-" + strconv.Itoa(own) + ".spans"} {
		p := filepath.Join(other, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		held = append(held, p)
	}
	kinds := func(pid int) map[string]SourceKind {
		cands, err := Discover(pid, pid)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]SourceKind{}
		for _, c := range cands {
			m[c.Inner] = c.Kind
		}
		return m
	}
	if k := kinds(pid)[inCwd]; k != SourceMarkers {
		t.Errorf("the marker file in the cwd: kind %v", k)
	}
	got := kinds(own)
	if got[held[0]] != SourceMarkers || got[held[1]] != SourceITTSpans {
		t.Errorf("held-open span files not found: %v", got)
	}
}

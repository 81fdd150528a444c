package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreDirChecked: a run store other users can write to, a symlinked one, and (as
// root) one another user owns are refused with one line saying what to do; a private
// one is used.
func TestStoreDirChecked(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	runs := filepath.Join(home, "runs")
	if err := os.Mkdir(runs, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(runs, 0o777)
	want := "run store " + runs + " can be written by other users (mode 0777): they could plant files that stax writes through; chmod go-w " + runs + ", or set STAX_HOME to a directory of your own"
	if _, err := Claim("run"); err == nil || err.Error() != want {
		t.Errorf("Claim in a 0777 store: %v\nwant %s", err, want)
	}
	if _, err := List(); err == nil || err.Error() != want {
		t.Errorf("List of a 0777 store: %v", err)
	}
	if ents, _ := os.ReadDir(runs); len(ents) != 0 {
		t.Errorf("files created in the shared store: %v", ents)
	}

	os.Chmod(runs, 0o755)
	if id, err := Claim("run"); err != nil || id != "run" {
		t.Errorf("Claim in a 0755 store of this user: %q, %v", id, err)
	}

	other := t.TempDir()
	os.Remove(runs + "/run.stax")
	os.Remove(runs)
	if err := os.Symlink(other, runs); err != nil {
		t.Fatal(err)
	}
	if _, err := Claim("run"); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("Claim in a symlinked store: %v", err)
	}
	os.Remove(runs)

	// A store in a directory others can write to: they could rename it away.
	os.Chmod(home, 0o777)
	if _, err := Claim("run"); err == nil || !strings.Contains(err.Error(), "is in "+home+", which other users can write to (mode 0777") {
		t.Errorf("Claim in a store under a 0777 directory: %v", err)
	}
	os.Chmod(home, 0o700)

	if os.Geteuid() != 0 {
		t.Log("not root: a store another user owns is not tried")
		return
	}
	os.Remove(runs)
	if err := os.Mkdir(runs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(runs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Claim("run"); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534, not to this user (uid 0)") {
		t.Errorf("Claim in another user's store: %v", err)
	}
}

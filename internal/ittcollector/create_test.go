package ittcollector

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runPlanted runs ittjit from a shell that first runs plant (with $F the dump file's name,
// which the pid kept through exec makes known in advance) and returns ittjit's pid, its
// standard error and the dump file's name.
func runPlanted(t *testing.T, dir, plant string) (pid int, stderr, dump string) {
	t.Helper()
	script := `F="$D/jit-$$.dump"; ` + plant + `; exec "$JIT" 1000`
	out, stderr := runProg(t, time.Minute, append(collectEnv(dir), "D="+dir, "JIT="+ittjitPath), "/bin/sh", "-c", script)
	if !strings.Contains(out, "run zeta") || !strings.Contains(out, "shutdown") {
		t.Errorf("output\n%s", out)
	}
	pid = h0pid(t, out)
	return pid, stderr, filepath.Join(dir, "jit-"+strconv.Itoa(pid)+".dump")
}

// A link planted at the dump file's name is not followed (the file it names is unchanged)
// nor removed, and the collector says why it writes nothing.
func TestDumpRefusesPlantedLink(t *testing.T) {
	needBuild(t)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, dump := runPlanted(t, dir, `ln -s "$D/victim" "$F"`)
	if !strings.Contains(stderr, "cannot write "+dump+": it is a symbolic link") {
		t.Errorf("stderr: %s", stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the link's target now holds %.60q", b)
	}
	if target, err := os.Readlink(dump); err != nil || target != victim {
		t.Errorf("the planted link was changed: %q, %v", target, err)
	}
}

// A file of another user at the name is refused and left alone; a FIFO is refused.
func TestDumpRefusesForeignFile(t *testing.T) {
	needBuild(t)
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	dir := t.TempDir()
	_, stderr, dump := runPlanted(t, dir, `echo theirs > "$F"; chown 65534 "$F"`)
	if !strings.Contains(stderr, "cannot write "+dump+": it exists and belongs to another user") {
		t.Errorf("stderr: %s", stderr)
	}
	var st syscall.Stat_t
	if b, _ := os.ReadFile(dump); string(b) != "theirs\n" {
		t.Errorf("the other user's file now holds %.60q", b)
	} else if syscall.Lstat(dump, &st) != nil || st.Uid != 65534 {
		t.Errorf("the other user's file now belongs to uid %d", st.Uid)
	}

	_, stderr, dump = runPlanted(t, t.TempDir(), `mkfifo "$F"`)
	if !strings.Contains(stderr, "cannot write "+dump+": it exists and is not a regular file") {
		t.Errorf("FIFO: stderr: %s", stderr)
	}
}

// A stale file of this user (an earlier process with the same pid) is replaced.
func TestDumpReplacesOwnStaleFile(t *testing.T) {
	needBuild(t)
	dir := t.TempDir()
	pid, stderr, dump := runPlanted(t, dir, `echo stale stale stale > "$F"`)
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("stale")) {
		t.Errorf("the stale bytes are still there")
	}
	h, recs, err := parseDump(data)
	if err != nil {
		t.Fatal(err)
	}
	checkHeader(t, h, pid)
	if len(recs) == 0 {
		t.Errorf("no records")
	}
	if fi, err := os.Lstat(dump); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 (%v)", fi.Mode(), err)
	}
}

package push

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQueueRefusesPlantedPaths: a symlink planted where a run's push queue goes (to a
// directory another user chose) is refused, not written through; a symlink planted at a
// request's temporary name inside the queue is replaced, its target untouched; a queue
// directory others can write to is refused.
func TestQueueRefusesPlantedPaths(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "RUN.push")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenQueue(link, 4); err == nil || !strings.Contains(err.Error(), "push queue "+link+" is a symlink") {
		t.Errorf("a planted queue symlink: %v", err)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Errorf("written through the planted link: %v", ents)
	}

	qdir := filepath.Join(dir, "ok.push")
	q, err := OpenQueue(qdir, 4)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "victim-file")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, q.file(1)+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(Request{Seq: 1, Path: "/p", Body: []byte("body")}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("the planted .tmp link's target now holds %q", b)
	}
	if r, ok := q.Peek(); !ok || string(r.Body) != "body" {
		t.Errorf("queued request read back as %+v, %v", r, ok)
	}

	// A queued request that is a symlink is not read.
	if err := os.Symlink(file, q.file(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := readRequest(q.file(2)); err == nil {
		t.Error("read a queued request through a symlink")
	}

	shared := filepath.Join(dir, "shared.push")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777)
	if _, err := OpenQueue(shared, 4); err == nil || !strings.Contains(err.Error(), "can be written by other users (mode 0777)") {
		t.Errorf("a shared queue directory: %v", err)
	}
}

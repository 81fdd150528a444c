package unwind

import (
	"os"
	"sync"
	"testing"
)

// TestFileLoaderSharesTables asks for two images from many goroutines at once: each image is
// parsed into one table that every caller gets, and a missing file gives nil to all.
func TestFileLoaderSharesTables(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	images := []Mapping{{Path: self}, {Path: "/lib/x86_64-linux-gnu/libc.so.6"}, {Path: "/nonexistent/image"}}
	if _, err := os.Stat(images[1].Path); err != nil {
		images[1].Path = self // another distribution's layout: the test still runs
		images[1].BuildID = "same-file-other-key"
	}
	var l FileLoader
	const callers = 16
	got := make([][]*Table, callers)
	var wg sync.WaitGroup
	for i := range callers {
		got[i] = make([]*Table, len(images))
		wg.Go(func() {
			for k := range images {
				j := (i + k) % len(images) // callers start on different images
				got[i][j] = l.Table(images[j])
			}
		})
	}
	wg.Wait()
	for j := range images {
		for i := 1; i < callers; i++ {
			if got[i][j] != got[0][j] {
				t.Fatalf("%s: callers got different tables", images[j].Path)
			}
		}
	}
	if got[0][0] == nil || got[0][1] == nil {
		t.Errorf("an image gave no table: %v, %v", got[0][0] != nil, got[0][1] != nil)
	}
	if got[0][2] != nil {
		t.Error("a missing file gave a table")
	}
}

package mapfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestMap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := Map(f, 1, 10)
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("Map = %q, %v", b, err)
	}
	Unmap(b)
	for _, r := range [][2]int64{{11, 20}, {1, 9}} {
		if _, err := Map(f, r[0], r[1]); !errors.Is(err, ErrSize) {
			t.Errorf("Map(%d..%d) of 10 bytes: %v, want ErrSize", r[0], r[1], err)
		}
	}
	empty := filepath.Join(t.TempDir(), "e")
	os.WriteFile(empty, nil, 0o600)
	e, _ := os.Open(empty)
	defer e.Close()
	if _, err := Map(e, 0, 10); !errors.Is(err, ErrSize) {
		t.Errorf("Map of an empty file: %v, want ErrSize", err)
	}
}

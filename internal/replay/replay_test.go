package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestRoundTripAndPlayback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.cap")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Record{{0, []byte("first")}, {3, []byte{}}, {1, bytes.Repeat([]byte{7}, 1000)}}
	for _, r := range want {
		w.Add(r.CPU, r.Data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	src, err := Open(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []Record
	reads := 0
	for {
		select {
		case <-src.Done():
			if !reflect.DeepEqual(got, want) {
				t.Errorf("played back %v, want %v", got, want)
			}
			if reads != 2 {
				t.Errorf("%d reads for 3 records in batches of 2", reads)
			}
			return
		default:
		}
		src.Read(func(cpu int, rec []byte) { got = append(got, Record{cpu, append([]byte{}, rec...)}) })
		reads++
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"empty", "", "bad magic"},
		{"foreign", "#!/bin/sh\n", "bad magic"},
		{"cut header", magic + "\x01\x00", "cut short"},
		{"cut record", magic + "\x00\x00\x00\x00\x10\x00\x00\x00abc", "cut short"},
		{"huge record", magic + "\x00\x00\x00\x00\xff\xff\xff\x7f", "out of bounds"},
		{"huge cpu", magic + "\xff\xff\xff\xff\x01\x00\x00\x00x", "out of bounds"},
	} {
		if _, err := Decode(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// FuzzDecode: no input makes the reader panic or allocate past its bounds.
func FuzzDecode(f *testing.F) {
	if b, err := os.ReadFile("../recorder/testdata/burn.cap"); err == nil {
		f.Add(b[:min(len(b), 4096)])
	}
	f.Add([]byte(magic))
	f.Add([]byte(magic + "\x00\x00\x00\x00\x03\x00\x00\x00abc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Decode(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range recs {
			if len(r.Data) > maxRecord || r.CPU >= maxCPU {
				t.Fatalf("record out of bounds: cpu %d, %d bytes", r.CPU, len(r.Data))
			}
		}
	})
}

// TestCreatePrivate: a capture holds raw stack copies, so it is created 0600 whatever the
// umask, never written over an existing file, and never through a symbolic link.
func TestCreatePrivate(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	path := filepath.Join(dir, "c.cap")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Add(0, []byte("secret"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("capture created %v, want -rw-------", st.Mode().Perm())
	}

	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(existing); err == nil {
		t.Error("Create wrote over an existing file")
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep" {
		t.Errorf("existing file now holds %q", b)
	}

	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(link); err == nil {
		t.Error("Create followed a symbolic link")
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Errorf("a file was created where the link points: %v", err)
	}
}

package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stax-profiler/stax/internal/store"
)

// TestExportOutputKeepsWhatItWritesTo: export -o writes into a FIFO (a reader gets the
// data), into a character device made for the test (it stays a device), through a
// symlink (the link stays, its target gets the data), to stdout with -o -, and replaces
// a regular file keeping its mode. save --force writes into a FIFO too.
func TestExportOutputKeepsWhatItWritesTo(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	t.Setenv("XDG_RUNTIME_DIR", "")
	const id = "20261101-120000-100"
	if err := store.Save(store.Path(id), fixtureRun(id, true)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	export := func(path string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main([]string{"export", "--format", "folded", "-o", path}, &out, &errOut); code != 0 {
			t.Fatalf("export -o %s: exit %d: %s", path, code, errOut.String())
		}
		return out.String(), errOut.String()
	}
	// What export writes to a file, to compare the others with.
	want := filepath.Join(dir, "plain.folded")
	export(want)
	wantText, err := os.ReadFile(want)
	if err != nil || !bytes.Contains(wantText, []byte("main;")) {
		t.Fatalf("the plain export: %v\n%s", err, wantText)
	}

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() {
			f, err := os.Open(fifo) // waits for the writer
			if err != nil {
				got <- nil
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			got <- b
		}()
		export(fifo)
		checkType(t, fifo, os.ModeNamedPipe) // else the reader waits on it forever
		if b := <-got; !bytes.Equal(b, wantText) {
			t.Errorf("the reader got %d bytes, want %d", len(b), len(wantText))
		}

		// save --force onto the FIFO: the reader gets a run file, the FIFO stays.
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- nil
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			got <- b
		}()
		var out, errOut bytes.Buffer
		if code := Main([]string{"save", "--force", "--run", id, fifo}, &out, &errOut); code != 0 {
			t.Fatalf("save --force onto a FIFO: exit %d: %s", code, errOut.String())
		}
		checkType(t, fifo, os.ModeNamedPipe)
		b := <-got
		if r, err := store.Decode(bytes.NewReader(b)); err != nil || r.Meta.ID != id {
			t.Errorf("the reader of save's FIFO got %d bytes that do not decode: %v", len(b), err)
		}
		if !strings.Contains(out.String(), "saved run "+id+" to "+fifo+": ") || !strings.Contains(out.String(), bytesText(int64(len(b)))) {
			t.Errorf("save said %q; want the %d bytes the reader got", out.String(), len(b))
		}
	})

	t.Run("device", func(t *testing.T) {
		var null syscall.Stat_t
		if err := syscall.Stat("/dev/null", &null); err != nil {
			t.Fatal(err)
		}
		dev := filepath.Join(dir, "null")
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(null.Rdev)); err != nil {
			if errors.Is(err, syscall.EPERM) {
				t.Skipf("mknod of a character device is not allowed here: %v", err)
			}
			t.Fatal(err)
		}
		export(dev)
		checkType(t, dev, os.ModeDevice|os.ModeCharDevice)
		var st syscall.Stat_t
		if err := syscall.Stat(dev, &st); err != nil || st.Rdev != null.Rdev {
			t.Errorf("%s is device %x now, want /dev/null's %x (%v)", dev, st.Rdev, null.Rdev, err)
		}
	})

	t.Run("symlink", func(t *testing.T) {
		target := filepath.Join(dir, "target.folded")
		if err := os.WriteFile(target, []byte("old"), 0o640); err != nil {
			t.Fatal(err)
		}
		os.Chmod(target, 0o640)
		link := filepath.Join(dir, "link.folded")
		if err := os.Symlink("target.folded", link); err != nil {
			t.Fatal(err)
		}
		export(link)
		if to, err := os.Readlink(link); err != nil || to != "target.folded" {
			t.Errorf("the link was replaced: %q, %v", to, err)
		}
		b, err := os.ReadFile(target)
		if err != nil || !bytes.Equal(b, wantText) {
			t.Errorf("the link's target holds %q (%v)", b, err)
		}
		if info, err := os.Stat(target); err != nil || info.Mode().Perm() != 0o640 {
			t.Errorf("the target's mode: %v (%v), want 0640 kept", info.Mode(), err)
		}

		// A symlink to the writer's standard output (a pipe here): written into.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		fdLink := filepath.Join(dir, "stdout-link")
		if err := os.Symlink("/proc/self/fd/"+itoa(int(w.Fd())), fdLink); err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(r); got <- b }()
		export(fdLink)
		w.Close()
		if b := <-got; !bytes.Equal(b, wantText) {
			t.Errorf("the pipe behind the link got %d bytes, want %d", len(b), len(wantText))
		}
		if _, err := os.Readlink(fdLink); err != nil {
			t.Errorf("the link to /proc/self/fd was replaced: %v", err)
		}

		// A link to nothing: no file is created where it points.
		dangling := filepath.Join(dir, "dangling")
		if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		if code := Main([]string{"export", "--format", "folded", "-o", dangling}, &out, &errOut); code == 0 ||
			!strings.Contains(errOut.String(), "does not exist: stax does not create files where a link points") {
			t.Errorf("export onto a dangling link: exit %d: %s", code, errOut.String())
		}
		if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
			t.Errorf("a file was created where the dangling link points: %v", err)
		}
	})

	t.Run("stdout", func(t *testing.T) {
		out, _ := export("-")
		if out != string(wantText) {
			t.Errorf("-o - wrote %d bytes to stdout, want %d", len(out), len(wantText))
		}
		if _, err := os.Stat("-"); !os.IsNotExist(err) {
			t.Errorf("-o - created a file named -: %v", err)
		}
	})
}

func checkType(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Type() != want {
		t.Fatalf("%s is %v now, want type %v", path, info.Mode().Type(), want)
	}
}

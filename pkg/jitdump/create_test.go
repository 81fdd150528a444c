//go:build linux

package jitdump

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// creators are the two files the package creates in a shared directory.
var creators = []struct {
	name   string
	file   string
	create func(dir string) error
}{
	{"jitdump", "jit-%d.dump", func(dir string) error {
		w, err := Create(dir)
		if err == nil {
			w.Close()
		}
		return err
	}},
	{"perfmap", "perf-%d.map", func(dir string) error {
		m, err := CreatePerfMap(dir)
		if err == nil {
			m.Close()
		}
		return err
	}},
}

func ownPath(dir, pattern string) string {
	return filepath.Join(dir, strings.Replace(pattern, "%d", strconv.Itoa(os.Getpid()), 1))
}

// A link planted at the file's name is not followed: the file it points to is unchanged,
// and creation fails saying why.
func TestCreateRefusesLink(t *testing.T) {
	for _, c := range creators {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, ownPath(dir, c.file)); err != nil {
				t.Fatal(err)
			}
			err := c.create(dir)
			if err == nil || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("created through a planted link: %v", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
				t.Errorf("the link's target now holds %.60q", b)
			}
			// A dangling link (to a file not yet there) creates nothing either.
			os.Remove(victim)
			if err := c.create(dir); err == nil {
				t.Errorf("created through a dangling link")
			}
			if _, err := os.Lstat(victim); err == nil {
				t.Errorf("the dangling link's target was created")
			}
		})
	}
}

// A file of another user at the name is refused and left as it was; so is a FIFO.
func TestCreateRefusesForeignFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	for _, c := range creators {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := ownPath(dir, c.file)
			if err := os.WriteFile(p, []byte("theirs\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			err := c.create(dir)
			if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
				t.Errorf("created over another user's file: %v", err)
			}
			var st syscall.Stat_t
			if b, _ := os.ReadFile(p); string(b) != "theirs\n" || syscall.Lstat(p, &st) != nil || st.Uid != 65534 {
				t.Errorf("the other user's file now holds %.60q, owner %d", b, st.Uid)
			}
		})
	}
}

func TestCreateRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	p := ownPath(dir, "jit-%d.dump")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("created over a FIFO: %v", err)
	}
}

// A stale file of this user (an earlier process with the same pid) is replaced by a new
// file, readable by its owner alone.
func TestCreateReplacesOwnStaleFile(t *testing.T) {
	for _, c := range creators {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := ownPath(dir, c.file)
			if err := os.WriteFile(p, bytes.Repeat([]byte("stale "), 100), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := c.create(dir); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte("stale")) {
				t.Errorf("the stale file's bytes are still there: %q", b)
			}
			if c.name == "jitdump" && (len(b) < 4 || binary.NativeEndian.Uint32(b) != jitformat.Magic) {
				t.Errorf("no jitdump header: %q", b)
			}
			fi, err := os.Lstat(p)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, want 0600 (%v)", fi.Mode(), err)
			}
		})
	}
}

// The header names the host's machine, as the ELF header of the running program does.
func TestHeaderMachineIsHost(t *testing.T) {
	exe, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	exe.Close()
	w, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b, err := os.ReadFile(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	h, err := jit.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.ElfMach != uint32(exe.Machine) || h.ElfMach == 0 {
		t.Errorf("header e_machine %d, the running program's %d (%v)", h.ElfMach, uint32(exe.Machine), exe.Machine)
	}
}

package perfevent

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

// probeMain has marked, a function of known bytes, a data symbol, a call into libc and a
// static function of the same name as one of probeOther's.
const probeMain = `
#include <stdio.h>
__asm__(".text\n.globl marked\n.type marked,@function\nmarked:\n.byte 0x90,0x0f,0x1f,0x00,0x0f,0x0b,0xc3\n.size marked,7\n");
void marked(void);
int counter = 1;
__attribute__((noinline, used)) static int dup_fn(int x) { return x * 3 + counter; }
int other(int);
int main(int argc, char **argv) { printf("%d\n", dup_fn(argc) + other(argc)); marked(); return 0; }
`

const probeOther = `
__attribute__((noinline, used)) static int dup_fn(int x) { return x * 5; }
int other(int x) { return dup_fn(x) + 1; }
`

const probeLib = `
__asm__(".text\n.globl marked\n.type marked,@function\nmarked:\n.byte 0x90,0x0f,0x1f,0x00,0x0f,0x0b,0xc3\n.size marked,7\n");
__attribute__((noinline)) static int hidden(int x) { return x + 1; }
int lib_fn(int x) { return hidden(x) * 2; }
`

// markedBytes are marked's instructions: at its file offset, the file holds them.
var markedBytes = []byte{0x90, 0x0f, 0x1f, 0x00, 0x0f, 0x0b, 0xc3}

// sectionOffset is where sym's bytes are in path's file, found through its section's
// header rather than the segments SymbolFileOffset reads.
func sectionOffset(t *testing.T, path, sym string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		if s.Name == sym && s.Section != elf.SHN_UNDEF && int(s.Section) < len(f.Sections) {
			sec := f.Sections[s.Section]
			return s.Value - sec.Addr + sec.Offset
		}
	}
	t.Fatalf("%s has no symbol %s", path, sym)
	return 0
}

// A uprobe's file offset: a symbol's address translated through the segment that holds
// it, in a position-independent program, a program linked at a fixed address (whose
// addresses are not its offsets), a shared library, and a stripped library (its dynamic
// symbols); and a clear error for what cannot be probed by name.
func TestSymbolFileOffset(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{"main.c": probeMain, "other.c": probeOther, "lib.c": probeLib} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srcs := []string{filepath.Join(dir, "main.c"), filepath.Join(dir, "other.c")}
	pie := testutil.CC(t, dir, "pie", "gcc", append([]string{"-O1", "-fpie", "-pie"}, srcs...)...)
	fixed := testutil.CC(t, dir, "fixed", "gcc", append([]string{"-O1", "-fno-pie", "-no-pie"}, srcs...)...)
	lib := testutil.CC(t, dir, "lib.so", "gcc", "-O1", "-shared", "-fPIC", filepath.Join(dir, "lib.c"))
	strippedLib := filepath.Join(dir, "stripped.so")
	strippedPie := filepath.Join(dir, "stripped-pie")
	for _, s := range [][2]string{{lib, strippedLib}, {pie, strippedPie}} {
		if out, err := exec.Command(testutil.RequireTool(t, "strip"), "-o", s[1], s[0]).CombinedOutput(); err != nil {
			t.Fatalf("strip: %v\n%s", err, out)
		}
	}
	for _, tc := range []struct{ path, sym string }{
		{pie, "marked"}, {fixed, "marked"}, {lib, "marked"}, {strippedLib, "marked"}, {lib, "lib_fn"}, {fixed, "main"},
	} {
		off, size, err := SymbolFileOffset(tc.path, tc.sym)
		if err != nil {
			t.Errorf("%s %s: %v", filepath.Base(tc.path), tc.sym, err)
			continue
		}
		want := sectionOffset(t, strings.Replace(tc.path, "stripped.so", "lib.so", 1), tc.sym)
		if off != want || size == 0 {
			t.Errorf("%s %s: file offset %#x, size %d; its section puts it at %#x", filepath.Base(tc.path), tc.sym, off, size, want)
		}
		if tc.sym != "marked" {
			continue
		}
		b, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if size != uint64(len(markedBytes)) || off+size > uint64(len(b)) || !bytes.Equal(b[off:off+size], markedBytes) {
			t.Errorf("%s: marked at file offset %#x (%d bytes) is not its instructions % x", filepath.Base(tc.path), off, size, markedBytes)
		}
		t.Logf("%s: marked at file offset %#x", filepath.Base(tc.path), off)
	}
	// Linked at 0x400000, the program's addresses are not its file offsets.
	if off, _, err := SymbolFileOffset(fixed, "marked"); err == nil {
		f, _ := elf.Open(fixed)
		syms, _ := f.Symbols()
		f.Close()
		for _, s := range syms {
			if s.Name == "marked" && s.Value == off {
				t.Errorf("fixed: marked's file offset is its address %#x: nothing was translated", off)
			}
		}
	}
	for _, tc := range []struct{ path, sym, why string }{
		{pie, "nope", "has no symbol nope"},
		{pie, "printf", "calls printf from a library"},
		{pie, "counter", "is data, not a function"},
		{pie, "dup_fn", "has 2 symbols dup_fn: give one by its file offset"},
		{strippedLib, "hidden", "has no other symbols (stripped)"},
		{strippedPie, "marked", "has no other symbols (stripped)"},
		{filepath.Join(dir, "main.c"), "main", "is not an ELF file"},
		{filepath.Join(dir, "none"), "main", "no such file"},
	} {
		off, _, err := SymbolFileOffset(tc.path, tc.sym)
		if err == nil || !strings.Contains(err.Error(), tc.why) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %s: %#x, %v; want one line saying %q", filepath.Base(tc.path), tc.sym, off, err, tc.why)
		}
	}
}

// A uprobe's path: absolute, relative to the current directory, or a program in $PATH.
func TestProbePath(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	for _, in := range []string{prog, "./prog", "prog", "../" + filepath.Base(dir) + "/prog"} {
		got, err := ProbePath(in)
		if err != nil || got != prog {
			t.Errorf("%q: %q, %v; want %q", in, got, err, prog)
		}
	}
	for _, tc := range []struct{ in, why string }{
		{"no-such-prog-here", "is no program in $PATH: give the file's path"},
		{"./none", "no file " + filepath.Join(dir, "none")},
		{dir, "is not a regular file"},
	} {
		got, err := ProbePath(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%q: %q, %v; want an error saying %q", tc.in, got, err, tc.why)
		}
	}
}

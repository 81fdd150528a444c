package unwind

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

func TestLiveStatic(t *testing.T) {
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "qsort-static", "gcc", "-O2", "-static", filepath.Join("testdata", "qsort.c"))
	samples, maps := capture(t, prog, 200)
	proc := &Maps{Mappings: maps, Loader: &FileLoader{}}
	sym := newSymbolizer(t, prog)
	var u Unwinder
	buf := make([]uint64, 0, 256)
	ok := 0
	for _, s := range samples {
		pcs, end := u.Unwind(proc, &Sample{Regs: s.Regs, Stack: s.Stack, FPChain: s.FPChain}, buf)
		ns := names(proc, prog, sym, pcs)
		if end == EndGarbage {
			t.Errorf("garbage ends %v", ns)
		}
		if end == EndComplete && ns[len(ns)-1] == "_start" {
			ok++
		}
		fixed, _ := FixChain(proc, s.FPChain)
		for _, pc := range fixed {
			if !usable(proc, pc) {
				t.Errorf("fixed fp chain keeps %#x", pc)
			}
		}
	}
	if ok < len(samples)*99/100 {
		t.Errorf("%d of %d stacks complete at _start", ok, len(samples))
	}
}

func TestLiveDeepRecursion(t *testing.T) {
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "recurse", "g++", "-O2", "-fomit-frame-pointer", filepath.Join("testdata", "recurse.cc"))
	samples, maps := capture(t, prog, 200)
	proc := &Maps{Mappings: maps, Loader: &FileLoader{}}
	sym := newSymbolizer(t, prog)
	var u Unwinder
	buf := make([]uint64, 0, 1024)
	for _, s := range samples {
		pcs, end := u.Unwind(proc, &Sample{Regs: s.Regs, Stack: s.Stack}, buf)
		ns := names(proc, prog, sym, pcs)
		switch end {
		case EndComplete:
			if ns[len(ns)-1] != "_start" {
				t.Errorf("complete stack ends in %q", ns[len(ns)-1])
			}
		case EndTruncated:
		case EndBadMemory:
			// ld.so's lazy-binding trampoline keeps its CFA in rbx, libgcc's context install
			// in rcx: samples carry neither.
			if last := proc.name(pcs[len(pcs)-1]); !strings.Contains(last, "ld-linux") && !strings.Contains(last, "libgcc_s") {
				t.Errorf("stack ended %v: %v", end, ns)
			}
		default:
			m, _ := proc.Mapping(pcs[len(pcs)-1])
			t.Errorf("stack ended %v: %v %#x in %s at %#x", end, ns, pcs, m.Path, m.Start-m.Offset)
		}
	}
	t.Logf("complete=%d truncated=%d", u.Counts[EndComplete].Load(), u.Counts[EndTruncated].Load())
	if u.Counts[EndTruncated].Load() == 0 {
		t.Error("no stack of depth 500 was marked truncated with a 16 KiB copy")
	}
}

func TestLiveSignalFrame(t *testing.T) {
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "signal", "gcc", "-O2", "-fomit-frame-pointer", filepath.Join("testdata", "signal.c"))
	samples, maps := capture(t, prog, 200)
	proc := &Maps{Mappings: maps, Loader: &FileLoader{}}
	sym := newSymbolizer(t, prog)
	var u Unwinder
	buf := make([]uint64, 0, 256)
	inHandler, through := 0, 0
	for _, s := range samples {
		pcs, end := u.Unwind(proc, &Sample{Regs: s.Regs, Stack: s.Stack}, buf)
		ns := names(proc, prog, sym, pcs)
		if ns[0] != "handler" {
			continue
		}
		inHandler++
		// handler, __restore_rt (libc), then the interrupted code of the program and main.
		if end == EndComplete && len(ns) >= 4 && strings.HasPrefix(ns[1], "lib:libc") && slices.Contains(ns, "main") && ns[len(ns)-1] == "_start" {
			through++
		} else {
			t.Logf("handler stack %v (%v)", ns, end)
		}
	}
	t.Logf("%d samples in the handler, %d unwound through the signal frame", inHandler, through)
	if inHandler < len(samples)/4 || through < inHandler*9/10 {
		t.Errorf("%d of %d handler samples unwound through the signal frame", through, inHandler)
	}
}

// The dynamic loader's _start has no call-frame information: the stacks of a program's
// start (relocation, its libraries' constructors) reach it through _dl_start or _dl_init
// and end there. entry.c is entered the same way: its stacks are complete at _start.
func TestLiveEntryWithoutCFI(t *testing.T) {
	dir := t.TempDir()
	prog := testutil.CC(t, dir, "entry", "gcc", "-O2", "-fomit-frame-pointer", "-static", "-nostdlib", "-fno-stack-protector", filepath.Join("testdata", "entry.c"))
	samples, maps := capture(t, prog, 200)
	proc := &Maps{Mappings: maps, Loader: &FileLoader{}}
	sym := newSymbolizer(t, prog)
	var u Unwinder
	buf := make([]uint64, 0, 256)
	for _, s := range samples {
		pcs, end := u.Unwind(proc, &Sample{Regs: s.Regs, Stack: s.Stack, FPChain: s.FPChain}, buf)
		if ns := names(proc, prog, sym, pcs); end != EndComplete || ns[len(ns)-1] != "_start" {
			t.Errorf("stack %v ended %v: want complete at _start", ns, end)
		}
	}
}

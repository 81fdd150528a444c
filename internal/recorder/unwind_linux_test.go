package recorder

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/resolve"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/unwind"
	"github.com/stax-profiler/stax/pkg/jitdump"
)

// The .eh_frame a jitdump announces for a function reaches the unwinder without its
// .eh_frame_hdr, and parses into a table covering the function.
func TestJITUnwindInfoFromJitdump(t *testing.T) {
	const addr, size = 0x7f0000001000, 0x40
	eh, hdr := jitdump.FramelessEHFrame(addr, size)
	data := append(append([]byte(nil), eh...), hdr...)
	res := resolve.New(proc.NewTracker(), symbol.Options{})
	res.JIT(42).Apply(1, jit.SourceJitdump, []jit.Record{
		{ID: jit.RecordID(4), Timestamp: 10, Unwind: &jit.UnwindingInfo{UnwindingSize: uint64(len(data)),
			EHFrameHdrSize: uint64(len(hdr)), MappedSize: uint64(len(data)), Data: data}},
		{ID: jit.RecordID(0), Timestamp: 11, Load: &jit.CodeLoad{Pid: 42, VMA: addr, CodeAddr: addr, CodeSize: size,
			CodeIndex: 1, Name: "leaf", Code: make([]byte, size)}},
	})
	info := jitUnwindInfo{res}
	got, base, ok := info.JITUnwindInfo(42, addr+8, 100)
	if !ok || !bytes.Equal(got, eh) || base != addr+size {
		t.Fatalf("JITUnwindInfo = %d bytes (want the %d of the .eh_frame), base %#x, %v", len(got), len(eh), base, ok)
	}
	tab, err := unwind.ParseEHFrame(got, base)
	if err != nil || tab.NumFDEs() != 1 {
		t.Fatalf("parse: %v, %v FDEs", err, tab)
	}
	if _, _, ok := info.JITUnwindInfo(42, addr+size+8, 100); ok {
		t.Error("an address outside the function has unwinding info")
	}
	if _, _, ok := info.JITUnwindInfo(7, addr, 100); ok {
		t.Error("another process has unwinding info")
	}
}

func TestUnnamedJITNotes(t *testing.T) {
	run := &store.Run{
		Profile: agg.Profile{
			Frames: []agg.Frame{{Func: "[unknown] 0x7f00", Image: "[anon]", Kind: agg.KindJIT}, {Func: "named", Image: "[jit]", Kind: agg.KindJIT}},
			Stacks: [][]uint32{{0}, {1}},
			Entries: []agg.Entry{{Pid: 1, Tid: 1, Stack: 0, Count: 5}, {Pid: 2, Tid: 2, Stack: 0, Count: 7},
				{Pid: 3, Tid: 3, Stack: 0, Count: 9}, {Pid: 4, Tid: 4, Stack: 1, Count: 100}},
		},
		JIT: []store.JITSource{{Pid: 1, Path: "/tmp/perf-1.map", Kind: "perfmap"}, {Pid: 2, Path: "/tmp/jit-2.dump", Kind: "jitdump", Functions: 10}},
	}
	run.Profile.LocateFrameStacks()
	notes := unnamedJITNotes(run, func(pid int) string { return map[int]string{1: "mono"}[pid] })
	want := []string{"pid 1 (mono): 5 samples", "perf map /tmp/perf-1.map is empty", "pid 2: 7 samples", "jitdump /tmp/jit-2.dump has not announced", "pid 3: 9 samples", "no jitdump or perf map names it yet"}
	all := strings.Join(notes, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("notes lack %q:\n%s", w, all)
		}
	}
	if len(notes) != 3 || strings.Contains(all, "pid 4") {
		t.Errorf("want three notes, none for the named process:\n%s", all)
	}
}

// A frame-pointer sample taken in the kernel while exec replaced the program: its user
// part holds the old program's ip, in no mapping the process has at that time (here, one
// the old program had before the exec). Its user frames go; the kernel's stay; the stack
// ends "unmapped". Taken in user mode, the ip stays, alone.
func TestFPStacksDropUnmappedUserRegisters(t *testing.T) {
	tr := proc.NewTracker()
	tr.AddMapping(7, proc.Mapping{Start: 0x400000, End: 0x500000, Path: "/old", Time: 10})
	tr.Exec(7, 100, "new")
	tr.AddMapping(7, proc.Mapping{Start: 0x7f0000000000, End: 0x7f0000100000, Path: "/new", Time: 110})
	chain := []uint64{perfrecord.ContextKernel, 0xffffffff81000010, 0xffffffff81000020, perfrecord.ContextUser, 0x44462e, 0x401000}
	for _, tc := range []struct {
		misc uint16
		want []uint64
	}{
		{perfrecord.MiscKernel, []uint64{perfrecord.ContextKernel, 0xffffffff81000010, 0xffffffff81000020}},
		{perfrecord.MiscUser, []uint64{perfrecord.ContextKernel, 0xffffffff81000010, 0xffffffff81000020, perfrecord.ContextUser, 0x44462e}},
	} {
		var f fpStacks
		got := f.check(tr, &perfrecord.Sample{Pid: 7, Time: 105, Misc: tc.misc}, chain, unwind.EndComplete)
		if !slices.Equal(got, tc.want) || f.ends[unwind.EndUnmapped].Load() != 1 {
			t.Errorf("misc %d: chain %#x (unmapped %d), want %#x", tc.misc, got, f.ends[unwind.EndUnmapped].Load(), tc.want)
		}
	}
	// Before the exec, the same ip was the old program's: kept.
	var f fpStacks
	if got := f.check(tr, &perfrecord.Sample{Pid: 7, Time: 50, Misc: perfrecord.MiscKernel}, chain, unwind.EndComplete); !slices.Equal(got, chain) {
		t.Errorf("before exec: chain %#x, want it whole", got)
	}
}

// A DWARF-mode sample taken while the recorder was behind keeps the kernel's frame-pointer
// chain, but its stack copy still shows a saved rbp that points at its own slot: the kernel
// walked it round and round, repeating the caller to its depth limit. The chain is cut
// after the first round, and the stack ends as a loop, as the unwinder would say.
func TestFPStacksCutALoopShownByTheStackCopy(t *testing.T) {
	tr := proc.NewTracker()
	tr.AddMapping(7, proc.Mapping{Start: 0x400000, End: 0x500000, Path: "/prog", Time: 10})
	const sp, bp, ret = 0x7ffd0000, 0x7ffd0010, 0x401234
	stack := make([]byte, 64)
	binary.LittleEndian.PutUint64(stack[bp-sp:], bp)    // saved rbp: this frame
	binary.LittleEndian.PutUint64(stack[bp-sp+8:], ret) // return address into the caller
	user := []uint64{0x401000}
	for range 20 {
		user = append(user, ret)
	}
	chain := append([]uint64{perfrecord.ContextUser}, user...)
	var f fpStacks
	s := &perfrecord.Sample{Pid: 7, Time: 50, Misc: perfrecord.MiscUser, RegsABI: 2, Regs: []uint64{bp, sp, 0x401000}, Stack: stack}
	got := f.check(tr, s, chain, unwind.EndComplete)
	want := []uint64{perfrecord.ContextUser, 0x401000, ret}
	if !slices.Equal(got, want) || f.ends[unwind.EndLoop].Load() != 1 {
		t.Errorf("chain %#x (loop %d), want %#x", got, f.ends[unwind.EndLoop].Load(), want)
	}
}

// TestUserChainFromCopy: a DWARF-mode sample's events carry no user frame-pointer chain;
// the chain is walked in the stack copy, after the kernel's part, and a chain that leaves
// the copy is marked truncated once checked. A chain that has a user part is kept.
func TestUserChainFromCopy(t *testing.T) {
	tr := proc.NewTracker()
	tr.AddMapping(7, proc.Mapping{Start: 0x400000, End: 0x500000, Path: "/prog", Time: 10})
	const sp = 0x7ffd0000
	stack := make([]byte, 48)
	binary.LittleEndian.PutUint64(stack[16:], sp+32)
	binary.LittleEndian.PutUint64(stack[24:], 0x401100)
	binary.LittleEndian.PutUint64(stack[32:], sp+4096) // the next frame lies above the copy
	binary.LittleEndian.PutUint64(stack[40:], 0x401200)
	w := &stackWorker{dwarf: &dwarfUnwinder{}}
	w.fp.maxStack = 127
	s := &perfrecord.Sample{Pid: 7, Time: 50, Misc: perfrecord.MiscKernel, RegsABI: 2, Regs: []uint64{sp + 16, sp, 0x401000}, Stack: stack}
	kernelOnly := []uint64{perfrecord.ContextKernel, 0xffffffff81000000}
	chain, end := w.userChainFromCopy(s, kernelOnly)
	want := []uint64{perfrecord.ContextKernel, 0xffffffff81000000, perfrecord.ContextUser, 0x401000, 0x401100, 0x401200}
	if !slices.Equal(chain, want) || end != unwind.EndTruncated {
		t.Fatalf("chain %#x (%v), want %#x, truncated", chain, end, want)
	}
	got := w.fp.check(tr, s, chain, end)
	if want := append(slices.Clone(want), perfrecord.TruncatedMark); !slices.Equal(got, want) || w.fp.ends[unwind.EndTruncated].Load() != 1 {
		t.Errorf("checked %#x (truncated %d), want %#x", got, w.fp.ends[unwind.EndTruncated].Load(), want)
	}
	withUser := []uint64{perfrecord.ContextUser, 0x401000, 0x401300}
	if chain, end := w.userChainFromCopy(s, withUser); !slices.Equal(chain, withUser) || end != unwind.EndComplete {
		t.Errorf("a chain with a user part became %#x (%v)", chain, end)
	}
	s.Regs = nil
	if chain, _ := w.userChainFromCopy(s, kernelOnly); !slices.Equal(chain, kernelOnly) {
		t.Errorf("a sample without user registers got %#x", chain)
	}
}

func TestCPythonNotes(t *testing.T) {
	run := &store.Run{
		Profile: agg.Profile{
			Frames: []agg.Frame{
				{Func: "_PyEval_EvalFrameDefault", Image: "libpython3.12.so.1.0", Kind: agg.KindUser},
				{Func: "_PyEval_EvalFrameDefault", Image: "python3.11", Kind: agg.KindUser},
				{Func: "main", Image: "app", Kind: agg.KindUser},
			},
			Stacks: [][]uint32{{0, 2}, {1}, {2}},
			Entries: []agg.Entry{{Pid: 1, Tid: 1, Stack: 0, Count: 5}, {Pid: 2, Tid: 2, Stack: 1, Count: 7},
				{Pid: 3, Tid: 3, Stack: 0, Count: 9}, {Pid: 4, Tid: 4, Stack: 2, Count: 100}},
		},
		JIT: []store.JITSource{{Pid: 3, Path: "/tmp/perf-3.map", Kind: "perfmap", Functions: 10}},
	}
	run.Profile.LocateFrameStacks()
	notes := cpythonNotes(run, func(pid int) string { return map[int]string{1: "python3.12"}[pid] })
	all := strings.Join(notes, "\n")
	for _, w := range []string{"pid 1 (python3.12): 5 samples", "`python -X perf` (3.12+) or `-X perf_jit` (3.13+), or PYTHONPERFSUPPORT=1",
		"pid 2: 7 samples", "before 3.12"} {
		if !strings.Contains(all, w) {
			t.Errorf("notes lack %q:\n%s", w, all)
		}
	}
	if len(notes) != 2 || strings.Contains(all, "pid 3") || strings.Contains(all, "pid 4") {
		t.Errorf("want two notes, none for the process with a perf map nor the one without CPython:\n%s", all)
	}
	for img, want := range map[string]int{"libpython3.12.so.1.0": 12, "python3.13": 13, "/usr/bin/python3.9": 9, "python3": -1, "libc.so.6": -1, "python3.x": -1} {
		if got := cpythonMinor(img); got != want {
			t.Errorf("cpythonMinor(%q) = %d, want %d", img, got, want)
		}
	}
}

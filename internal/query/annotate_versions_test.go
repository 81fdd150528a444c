package query

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/testutil"
)

// oneFrame names every address "fib" (a JIT function compiled several times).
type oneFrame struct{}

func (oneFrame) Resolve(pid uint32, t uint64, chain []uint64, out []agg.Site) ([]agg.Site, int, uint64, int) {
	return append(out, agg.Site{Frame: agg.Frame{Func: "fib", Image: "[jit]", Kind: agg.KindJIT}, Addr: chain[1],
		Mapping: agg.Mapping{Pid: pid, File: "[jit]"}}), len(out), chain[1], 0
}
func (oneFrame) Version() uint64 { return 1 }

// loop is x86-64 code: nop x4; add rax,1; jmp back to the add; ret.
var loop = []byte{0x90, 0x90, 0x90, 0x90, 0x48, 0x83, 0xc0, 0x01, 0xeb, 0xfa, 0xc3}

const ctxUser = ^uint64(512 - 1)

// versionsRun has three versions of fib: v1 at A (loaded at 100), v2 at B (loaded at 200),
// and v3 at A again (loaded at 300: A was reused). Samples at A before 300 are v1's,
// after it v3's, though they share one address and so one entry.
func versionsRun(t *testing.T) *store.Run {
	const A, B = 0x7f0000001000, 0x7f0000002000
	r := agg.NewRun()
	add := func(t0, n int, addr uint64) {
		for i := range n {
			r.AddSample(1, 1, 0, uint64(t0+i), 0, []uint64{ctxUser, addr})
		}
	}
	add(110, 10, A+4) // v1
	add(210, 30, B+8) // v2
	add(310, 60, A+4) // v3, same address as v1
	add(320, 5, A+8)  // v3
	add(330, 2, 0x7f0000009000)
	r.Resolve(oneFrame{})
	p := r.Profile(nil)
	code := func(start, load uint64) store.Code {
		return store.Code{Frame: 0, Pid: 1, Start: start, Size: uint64(len(loop)), Arch: int(elf.EM_X86_64), LoadTime: load, Bytes: loop, Origin: "jitdump"}
	}
	return &store.Run{Meta: store.Meta{ID: "v", StartNs: 50}, Profile: *p,
		Code: []store.Code{code(B, 200), code(A, 100), code(A, 300), code(A, 300)}}
}

func TestAnnotateSplitsSamplesAmongVersions(t *testing.T) {
	run := versionsRun(t)
	res, err := Annotate(run, AnnotateOptions{Target: "fib"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Versions) != 3 {
		t.Fatalf("versions %+v, want 3 (the duplicate kept once)", res.Versions)
	}
	wantSamples := []uint64{10, 30, 65}
	for i, v := range res.Versions {
		if v.Index != i+1 || v.Samples != wantSamples[i] {
			t.Errorf("version %d: %+v, want %d samples", i+1, v, wantSamples[i])
		}
	}
	if v := res.Versions[0]; v.LoadSec == nil || *v.LoadSec != 50e-9 {
		t.Errorf("version 1 load time %v, want 50 ns after the start", v.LoadSec)
	}
	a := res.Annotation
	if res.Version != 3 || a.Total != 65 || a.Outside != 2 {
		t.Errorf("annotated version %d with %d samples, %d outside; want 3, 65, 2 (only those outside every version)", res.Version, a.Total, a.Outside)
	}
	res, err = Annotate(run, AnnotateOptions{Target: "fib", Version: 1})
	if err != nil || res.Annotation.Total != 10 || res.Annotation.Start != 0x7f0000001000 {
		t.Errorf("--version 1: %v, %+v", err, res)
	}
	res, err = Annotate(run, AnnotateOptions{Target: "0x7f0000002004"})
	if err != nil || res.Version != 2 || res.Annotation.Total != 30 {
		t.Errorf("an address picks its version: %v, %+v", err, res)
	}
	if _, err := Annotate(run, AnnotateOptions{Target: "fib", Version: 4}); err == nil || !strings.Contains(err.Error(), "numbered 1 to 3") {
		t.Errorf("--version 4: %v", err)
	}
}

// TestAnnotateShowsGaps: bytes a run says were not captured are shown as a gap, through a
// saved run too, never disassembled.
func TestAnnotateShowsGaps(t *testing.T) {
	run := versionsRun(t)
	for i := range run.Code {
		c := &run.Code[i]
		c.Bytes = append([]byte(nil), loop[:4]...)
		c.Bytes = append(c.Bytes, make([]byte, len(loop)-4)...)
		c.Gaps = []store.Gap{{Start: c.Start + 4, End: c.Start + uint64(len(loop)), Why: "the process had exited before they were read"}}
	}
	var buf bytes.Buffer
	if err := store.Encode(&buf, run); err != nil {
		t.Fatal(err)
	}
	saved, err := store.Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Annotate(saved, AnnotateOptions{Target: "fib"})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Annotation
	text := a.String()
	if len(a.Insts) != 4 || len(a.Gaps) != 1 || a.Gaps[0].Samples != 65 || strings.Contains(text, "(%rax)") ||
		!strings.Contains(text, "code bytes for 0x7f0000001004-0x7f000000100b were not captured: the process had exited before they were read") {
		t.Errorf("%d instructions, gaps %+v:\n%s", len(a.Insts), a.Gaps, text)
	}
}

func TestAnnotateInlinedTarget(t *testing.T) {
	const start = 0x401000
	run := &store.Run{
		Profile: agg.Profile{
			Frames: []agg.Frame{{Func: "main", Image: "prog", Kind: agg.KindUser},
				{Func: "step", Image: "prog", Kind: agg.KindUser, Inlined: true}},
			Stacks: [][]uint32{{1, 0}, {0}},
			Entries: []agg.Entry{{Tid: 1, Stack: 0, Count: 40, Leaf: start + 4, LeafFunc: 0},
				{Tid: 1, Stack: 1, Count: 10, Leaf: start + 8, LeafFunc: 0}},
		},
		Code: []store.Code{{Frame: 0, Start: start, Size: uint64(len(loop)), Arch: int(elf.EM_X86_64), Bytes: loop}},
	}
	run.Profile.LocateFrameStacks()
	res, err := Annotate(run, AnnotateOptions{Target: "step (inlined)"})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Annotation
	if a.Func != "main" || res.Inlined == nil || res.Inlined.Func != "step" || res.Inlined.Into != "main" || a.FocusSamples != 40 || a.Total != 50 {
		t.Fatalf("annotate step (inlined): func %q, inlined %+v, focus %d of %d", a.Func, res.Inlined, a.FocusSamples, a.Total)
	}
	for _, in := range a.Insts {
		if (in.Addr == start+4) != (in.Focus == 40) {
			t.Errorf("instruction %#x marked with %d focus samples", in.Addr, in.Focus)
		}
	}
	if !strings.Contains(a.String(), "▶") {
		t.Errorf("the inlined function's instructions are not marked:\n%s", a)
	}
}

// TestAnnotateImageOffset annotates an image+0xOFF row: code no symbol bounds, kept as a
// window of the image around the address, which starts mid-instruction.
func TestAnnotateImageOffset(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "w.c")
	os.WriteFile(src, []byte("int spin(long n){long s=0;for(long i=0;i<n;i++)s+=i*i^(s>>3);return s;}\nint main(int c,char**v){return spin(c<<20);}\n"), 0o644)
	prog := testutil.CC(t, dir, "w", "gcc", "-O1", "-no-pie", "-fno-pie", src)
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	syms, _ := f.Symbols()
	f.Close()
	var spin elf.Symbol
	for _, s := range syms {
		if s.Name == "spin" {
			spin = s
		}
	}
	if spin.Value == 0 || spin.Size < 16 {
		t.Fatalf("no spin symbol in %s", prog)
	}
	// The sampled address: the last instruction of spin's first 16 bytes, found by
	// decoding from the symbol; the window begins 3 bytes before the symbol (mid-code).
	first := &store.Run{
		Profile: agg.Profile{Frames: []agg.Frame{{Func: "spin", Image: "w", Kind: agg.KindUser}}, Stacks: [][]uint32{{0}},
			Entries: []agg.Entry{{Stack: 0, Count: 1, Leaf: spin.Value, LeafFunc: 0}}},
		Code: []store.Code{{Frame: 0, Start: spin.Value, Size: spin.Size, Arch: int(elf.EM_X86_64), Path: prog, Vaddr: spin.Value}},
	}
	first.Profile.LocateFrameStacks()
	whole, _ := Annotate(first, AnnotateOptions{Target: "spin"})
	if whole == nil || len(whole.Annotation.Insts) < 3 {
		t.Fatalf("annotate spin: %+v", whole)
	}
	hot := whole.Annotation.Insts[2].Addr
	name := "w+0x" + strconv.FormatUint(hot, 16)
	run := &store.Run{
		Profile: agg.Profile{Frames: []agg.Frame{{Func: name, Image: "w", Kind: agg.KindUnknown}}, Stacks: [][]uint32{{0}},
			Entries: []agg.Entry{{Stack: 0, Count: 7, Leaf: hot, LeafFunc: -1}}},
		Code: []store.Code{{Frame: 0, Start: spin.Value - 3, Size: 64, Arch: int(elf.EM_X86_64), Path: prog, Vaddr: spin.Value - 3}},
	}
	run.Profile.LocateFrameStacks()
	res, err := Annotate(run, AnnotateOptions{Target: name})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Annotation
	if a.Total != 7 || a.Outside != 0 {
		t.Fatalf("%s: %d samples (%d outside), want 7 on an instruction:\n%s", name, a.Total, a.Outside, a)
	}
	for _, in := range a.Insts {
		if in.Addr == hot && in.Samples == 7 && !strings.Contains(in.Text, "bad") {
			return
		}
	}
	t.Errorf("the sampled instruction at %#x is not decoded as in the function:\n%s", hot, a)
}

// Bytes read from a process's memory that cannot be the code the samples ran in are not
// shown: v1's begin with zero bytes (read before the code was written), v2's have the
// sampled address B+8 inside an instruction where another object was too (its code), a
// version sampled on zero bytes is padding; each is reported as not captured, and the
// hottest version whose reading fits its samples is annotated. A sample inside an
// instruction of code no other object had is data the decoding ran through: shown.
func TestAnnotateRejectsReadingsNotTheCode(t *testing.T) {
	run := versionsRun(t)
	other := store.Code{Frame: 1, Pid: 1, Start: 0x7f0000002000, Size: 16, Arch: int(elf.EM_X86_64), LoadTime: 150, Origin: "memory"}
	run.Code = append(run.Code, other)
	movabs := []byte{0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 0xc3} // B+8 is inside the movabs
	zeros := append(make([]byte, 8), loop[8:]...)
	for i := range run.Code {
		c := &run.Code[i]
		c.Origin = "memory"
		switch {
		case c.LoadTime == 100:
			c.Bytes = zeros
		case c.LoadTime == 200:
			c.Bytes = movabs
		}
	}
	res, err := Annotate(run, AnnotateOptions{Target: "fib"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 3 || res.Warning != "" {
		t.Errorf("annotated version %d (warning %q), want 3: the one whose bytes fit", res.Version, res.Warning)
	}
	for i, want := range []string{"begin with 8 zero bytes", "inside an instruction", ""} {
		v := res.Versions[i]
		if want == "" && v.Error != "" || want != "" && (!strings.Contains(v.Error, "not captured") || !strings.Contains(v.Error, want)) {
			t.Errorf("version %d error %q, want one saying the code was not captured (%s)", i+1, v.Error, want)
		}
	}
	if _, err := Annotate(run, AnnotateOptions{Target: "fib", Version: 2}); err == nil || !strings.Contains(err.Error(), "not captured") {
		t.Errorf("--version 2: %v, want its bytes reported as not captured", err)
	}
	// v3 read where the samples at A+4 and A+8 land on zero bytes: padding, not code.
	for i := range run.Code {
		if c := &run.Code[i]; c.LoadTime == 300 {
			c.Bytes = []byte{0x90, 0x90, 0x90, 0x90, 0, 0, 0, 0, 0, 0, 0xc3}
		}
	}
	if _, err := Annotate(run, AnnotateOptions{Target: "fib"}); err == nil || !strings.Contains(err.Error(), "zero or padding") {
		t.Errorf("every reading wrong: %v, want an error saying the code was not captured", err)
	}
	// v3 read after its memory was freed: a free list's link where its first instruction was.
	for i := range run.Code {
		if c := &run.Code[i]; c.LoadTime == 300 {
			c.Bytes = append([]byte{0x10, 0x20, 0x30, 0x40, 0x93, 0x7f, 0, 0}, loop[8:]...)
		}
	}
	if _, err := Annotate(run, AnnotateOptions{Target: "fib"}); err == nil || !strings.Contains(err.Error(), "begin with an address") {
		t.Errorf("a reading that begins with a pointer: %v, want it reported as not captured", err)
	}
	// Without the other object at B (0x7f0000002000), v2's sample inside its movabs may be data in its code:
	// v2 is shown.
	run = versionsRun(t)
	for i := range run.Code {
		if c := &run.Code[i]; c.LoadTime == 200 {
			c.Origin, c.Bytes = "memory", movabs
		}
	}
	if res, err := Annotate(run, AnnotateOptions{Target: "fib", Version: 2}); err != nil || res.Versions[1].Error != "" {
		t.Errorf("a reading no other code shared, sampled inside an instruction: %v, want it shown", err)
	}
	// The JIT's own copy is never second-guessed.
	run = versionsRun(t)
	for i := range run.Code {
		run.Code[i].Bytes = zeros
	}
	if res, err := Annotate(run, AnnotateOptions{Target: "fib"}); err != nil || res.Versions[0].Error != "" {
		t.Errorf("jitdump bytes: %v %+v, want them shown as they are", err, res)
	}
}

package annotate

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/disasm"
)

// loopCode is a small x86-64 function:
//
//	0x1000: push %rbp
//	0x1001: xor  %eax,%eax
//	0x1003: add  %rdi,%rax      <- loop head (L1)
//	0x1006: dec  %rdi
//	0x1009: jne  0x1003         (backward)
//	0x100b: call 0x2000         (malloc)
//	0x1010: pop  %rbp
//	0x1011: ret
var loopCode = mustHex("55 31c0 4801f8 48ffcf 75f8 e8f00f0000 5d c3")

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

func loopInput() Input {
	return Input{
		Func:  "sum",
		Image: "[jit]",
		Start: 0x1000,
		Code:  loopCode,
		Arch:  disasm.ArchX86_64,
		Samples: map[uint64]uint64{
			0x1003: 6000,
			0x1004: 120, // inside the add: attributed to it
			0x1006: 3000,
			0x1009: 880,
			0x1011: 1,
			0x9999: 7, // outside
		},
		Lines: func(addr uint64) (string, int, []string) {
			switch {
			case addr < 0x1003:
				return "/src/loops.c", 2, nil
			case addr < 0x100b:
				return "/src/loops.c", 3, []string{"loops.c:9"}
			default:
				return "/src/loops.c", 4, nil
			}
		},
		Source: func(file string) ([]string, error) {
			if file != "/src/loops.c" {
				return nil, errors.New("no such file")
			}
			return []string{"long sum(long n) {", "\tlong s = 0;", "\twhile (n--) s += n;", "\treturn s + (long)malloc(1);", "}"}, nil
		},
		Symbolize: func(addr uint64) (string, bool) {
			if addr == 0x2000 {
				return "malloc", true
			}
			return "", false
		},
	}
}

func TestAnnotate(t *testing.T) {
	a := Annotate(loopInput())
	if a.Total != 10001 || a.Outside != 7 {
		t.Fatalf("total %d outside %d", a.Total, a.Outside)
	}
	if len(a.Insts) != 8 {
		t.Fatalf("%d insts", len(a.Insts))
	}
	add := a.Insts[2]
	if add.Samples != 6120 || add.Label != "L1" || add.Heat != 8 || len(add.JumpFrom) != 1 || add.JumpFrom[0] != 0x1009 {
		t.Errorf("add: %+v", add)
	}
	jne := a.Insts[4]
	if jne.Display != "jne    L1" || !jne.Backward || jne.JumpLabel != "L1" {
		t.Errorf("jne: %+v", jne)
	}
	if call := a.Insts[5]; call.Display != "call   0x2000 <malloc>" {
		t.Errorf("call: %q", call.Display)
	}
	if len(a.SourceBlocks) != 3 {
		t.Fatalf("blocks: %+v", a.SourceBlocks)
	}
	if b := a.SourceBlocks[1]; b.Line != 3 || b.Text != "    while (n--) s += n;" || b.First != 2 || b.Last != 4 || b.Samples != 10000 {
		t.Errorf("block: %+v", b)
	}
	if len(a.HotLines) != 2 || a.HotLines[0].Line != 3 || a.HotLines[1].Line != 4 {
		t.Errorf("hot lines: %+v", a.HotLines)
	}
	txt := a.String()
	t.Logf("\n%s", txt)
	for _, want := range []string{
		" sum  [jit]  10,001 samples (+7 outside the code)  hottest lines: loops.c:3 (100.0%), loops.c:4 (0.0%)",
		"│ /src/loops.c:3  (inlined from loops.c:9)",
		"│       while (n--) s += n;",
		"    61.19     6,120  ████ │ L1: 0x1003:  add    %rdi,%rax",
		"jne    L1   ↑",
		"0x100b:  call   0x2000 <malloc>",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q", want)
		}
	}
}

func TestJSON(t *testing.T) {
	a := Annotate(loopInput())
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	var back Annotation
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Total != a.Total || len(back.Insts) != len(a.Insts) || back.Insts[2].Label != "L1" || back.Insts[2].Addr != 0x1003 {
		t.Errorf("round trip: %+v", back)
	}
	for _, key := range []string{`"func":"sum"`, `"hot_lines"`, `"samples":6120`, `"text":"add    %rdi,%rax"`, `"display"`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestNoOptionalInputs(t *testing.T) {
	in := loopInput()
	in.Lines, in.Source, in.Symbolize = nil, nil, nil
	a := Annotate(in)
	if len(a.SourceBlocks) != 0 || len(a.HotLines) != 0 {
		t.Errorf("unexpected source info")
	}
	if a.Insts[5].Display != "call   0x2000" {
		t.Errorf("call: %q", a.Insts[5].Display)
	}
	_ = a.String()
	// Empty function, no samples.
	e := Annotate(Input{Func: "empty", Arch: disasm.ArchX86_64})
	if e.Total != 0 || len(e.Insts) != 0 || !strings.Contains(e.String(), "0 samples") {
		t.Errorf("empty: %+v", e)
	}
}

func TestUnreadableSourceLeavesTextOut(t *testing.T) {
	in := loopInput()
	in.Source = func(string) ([]string, error) { return nil, errors.New("permission denied") }
	a := Annotate(in)
	if len(a.SourceBlocks) != 3 || a.SourceBlocks[0].Text != "" {
		t.Errorf("blocks: %+v", a.SourceBlocks)
	}
}

func TestHeatBarAndCommas(t *testing.T) {
	for _, tc := range []struct {
		s, m uint64
		want string
	}{{0, 10, "    "}, {10, 10, "████"}, {5, 10, "██  "}, {1, 1000, "▏   "}} {
		if got := heatBar(tc.s, tc.m); got != tc.want {
			t.Errorf("heatBar(%d,%d)=%q want %q", tc.s, tc.m, got, tc.want)
		}
	}
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 12345: "12,345", 1234567: "1,234,567"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d)=%q", n, got)
		}
	}
}

func TestForwardJumpAndOutOfFunctionTarget(t *testing.T) {
	// 0: test %edi,%edi; 2: je +3 (→7); 4: nop; 5: jmp 0x100 (outside); 7: ret
	code := mustHex("85ff 7403 90 ebf9 c3")
	// jmp at 5 with rel -7: target = 7-7 = 0 (inside, backward). Use an
	// outside target instead.
	code[6] = 0x79 // 7+0x79 = 0x80, outside
	a := Annotate(Input{Func: "f", Start: 0, Code: code, Arch: disasm.ArchX86_64,
		Symbolize: func(addr uint64) (string, bool) { return "g", addr == 0x80 }})
	if a.Insts[1].Display != "je     L1" || a.Insts[1].Backward {
		t.Errorf("je: %+v", a.Insts[1])
	}
	if a.Insts[3].Display != "jmp    0x80 <g>" {
		t.Errorf("jmp: %q", a.Insts[3].Display)
	}
	if !strings.Contains(a.String(), "je     L1   ↓") {
		t.Errorf("no forward arrow:\n%s", a)
	}
}

// TestGapsAreNotDisassembled: bytes that were not captured are shown as a gap with its
// reason and samples, never decoded (zeros would read as add %al,(%rax)).
func TestGapsAreNotDisassembled(t *testing.T) {
	in := loopInput()
	in.Code = append([]byte(nil), in.Code...)
	for i := 6; i < 0xb; i++ {
		in.Code[i] = 0 // what a page read before the code was written holds
	}
	in.Gaps = []Gap{{Start: 0x1008, End: 0x100b, Why: "the process had exited"}, {Start: 0x1006, End: 0x1009, Why: "the process had exited"}, {Start: 0x2000, End: 0x3000, Why: "outside"}}
	a := Annotate(in)
	var addrs []uint64
	for _, i := range a.Insts {
		addrs = append(addrs, i.Addr)
	}
	if fmt.Sprint(addrs) != fmt.Sprint([]uint64{0x1000, 0x1001, 0x1003, 0x100b, 0x1010, 0x1011}) {
		t.Errorf("instructions at %x, want none in 0x1006-0x100b", addrs)
	}
	if len(a.Gaps) != 1 || a.Gaps[0].Start != 0x1006 || a.Gaps[0].End != 0x100b || a.Gaps[0].Samples != 3880 || a.Gaps[0].Before != 3 {
		t.Fatalf("gaps %+v, want one 0x1006-0x100b with 3880 samples before instruction 3", a.Gaps)
	}
	if a.Total != 10001 || a.Outside != 7 || a.End != 0x1012 {
		t.Errorf("total %d, outside %d, end %#x", a.Total, a.Outside, a.End)
	}
	text := a.String()
	if !strings.Contains(text, "3,880") || !strings.Contains(text, "code bytes for 0x1006-0x100b were not captured: the process had exited") ||
		strings.Contains(text, "(%rax)") || strings.Contains(text, "dec") {
		t.Errorf("text:\n%s", text)
	}
	if i := strings.Index(text, "not captured"); i < strings.Index(text, "add ") || i > strings.Index(text, "call") {
		t.Errorf("the gap is not shown between add and call:\n%s", text)
	}
	// A gap at the end is the end of the code shown.
	in.Code, in.Gaps = loopCode, []Gap{{Start: 0x1010, End: 0x1100, Why: "gone"}}
	if a := Annotate(in); a.End != 0x1012 || len(a.Insts) != 6 || a.Gaps[0].Before != 6 || a.Gaps[0].Samples != 1 {
		t.Errorf("trailing gap: end %#x, %d instructions, gaps %+v", a.End, len(a.Insts), a.Gaps)
	}
}

// FuzzAnnotate feeds arbitrary code and sample addresses through the
// whole pipeline.
func FuzzAnnotate(f *testing.F) {
	f.Add(loopCode, uint64(0x1003), uint64(5), false)
	f.Add([]byte{0x75, 0xfe, 0xeb, 0xfc}, uint64(0x1000), uint64(1), true)
	f.Fuzz(func(t *testing.T, code []byte, addr, n uint64, arm bool) {
		arch := disasm.ArchX86_64
		if arm {
			arch = disasm.ArchARM64
		}
		a := Annotate(Input{
			Func: "f", Start: 0x1000, Code: code, Arch: arch,
			Samples: map[uint64]uint64{addr: n, 0x1000: 1},
			Lines: func(a uint64) (string, int, []string) {
				return "x.c", int(a % 7), []string{fmt.Sprint(a % 3)}
			},
			Source: func(string) ([]string, error) { return []string{"a", "b"}, nil },
			Gaps:   []Gap{{Start: 0x1000 + n%uint64(len(code)+1), End: 0x1000 + n%uint64(len(code)+1) + addr%64, Why: "x"}},
		})
		var sum uint64
		for _, in := range a.Insts {
			sum += in.Samples
		}
		for _, g := range a.Gaps {
			sum += g.Samples
		}
		if sum != a.Total {
			t.Fatalf("sum %d != total %d", sum, a.Total)
		}
		_ = a.String()
	})
}

// bigFunction returns ~n instructions of x86 code with loops, calls and
// a sample map with the given number of distinct addresses.
func bigFunction(n, nsamples int) ([]byte, map[uint64]uint64) {
	unit := mustHex("4801f8 48ffcf 75f8 e800000000 0f1f4000 c5fe6f0e c5fd74c1 89c2 83c201 90")
	perUnit := 10
	var code []byte
	for len(code)/len(unit)*perUnit < n {
		code = append(code, unit...)
	}
	samples := make(map[uint64]uint64, nsamples)
	for i := 0; len(samples) < nsamples && i < 10*nsamples; i++ {
		off := uint64((i * 7919) % len(code))
		samples[0x400000+off] += uint64(1 + i%13)
	}
	return code, samples
}

func TestBigFunctionShape(t *testing.T) {
	code, samples := bigFunction(5000, 100000)
	a := Annotate(Input{Func: "big", Start: 0x400000, Code: code, Arch: disasm.ArchX86_64, Samples: samples})
	if len(a.Insts) < 5000 {
		t.Fatalf("only %d insts", len(a.Insts))
	}
	var sum uint64
	for _, v := range samples {
		sum += v
	}
	if a.Total+a.Outside != sum || a.Outside != 0 {
		t.Errorf("total %d outside %d sum %d", a.Total, a.Outside, sum)
	}
}

// BenchmarkAnnotate5000 annotates a 5,000-instruction function with
// 100,000 sample addresses (distinct keys), with line and symbol lookups.
func BenchmarkAnnotate5000(b *testing.B) {
	code, samples := bigFunction(5000, 100000)
	in := Input{
		Func: "big", Start: 0x400000, Code: code, Arch: disasm.ArchX86_64, Samples: samples,
		Lines: func(a uint64) (string, int, []string) { return "big.c", int(a-0x400000) / 40, nil },
		Source: func(string) ([]string, error) {
			return make([]string, 10000), nil
		},
		Symbolize: func(a uint64) (string, bool) { return "callee", true },
	}
	b.ReportAllocs()
	for b.Loop() {
		a := Annotate(in)
		_ = a.String()
	}
}

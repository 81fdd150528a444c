package disasm

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestArchFromELF(t *testing.T) {
	if ArchFromELF(62) != ArchX86_64 || ArchFromELF(183) != ArchARM64 || ArchFromELF(3) != ArchUnknown {
		t.Fatal("ArchFromELF")
	}
	if ArchX86_64.String() != "x86_64" || ArchARM64.String() != "aarch64" {
		t.Fatal("Arch.String")
	}
}

func TestX86Encodings(t *testing.T) {
	for _, tc := range []struct {
		hex, att, intel string
	}{
		{"f30f1efa", "endbr64", "endbr64"},
		{"f30f1efb", "endbr32", "endbr32"},
		{"c5f877", "vzeroupper", "vzeroupper"},
		{"c5fc77", "vzeroall", "vzeroall"},
		{"c3", "ret", "ret"},
		{"f3c3", "repz ret", "repz ret"},
		{"55", "push   %rbp", "push   rbp"},
		{"4883e4f0", "and    $0xfffffffffffffff0,%rsp", "and    rsp,0xfffffffffffffff0"},
		{"83f8ff", "cmp    $0xffffffff,%eax", "cmp    eax,0xffffffff"},
		{"0f1f4000", "nopl   0x0(%rax)", "nop    DWORD PTR [rax+0x0]"},
		{"662e0f1f840000000000", "cs nopw 0x0(%rax,%rax,1)", "cs nop WORD PTR [rax+rax*1+0x0]"},
		{"6690", "xchg   %ax,%ax", "xchg   ax,ax"},
		{"4898", "cltq", "cdqe"},
		{"4863d2", "movslq %edx,%rdx", "movsxd rdx,edx"},
		{"3effe0", "notrack jmp *%rax", "notrack jmp rax"},
		{"f348ab", "rep stos %rax,%es:(%rdi)", ""},
		{"48b80000000000000080", "movabs $0x8000000000000000,%rax", "movabs rax,0x8000000000000000"},
		{"8b8590faffff", "mov    -0x570(%rbp),%eax", "mov    eax,DWORD PTR [rbp-0x570]"},
		{"498b0424", "mov    (%r12),%rax", "mov    rax,QWORD PTR [r12]"},
		{"64488b042528000000", "mov    %fs:0x28,%rax", "mov    rax,QWORD PTR fs:0x28"},
		{"c5fe6f0e", "vmovdqu (%rsi),%ymm1", "vmovdqu ymm1,YMMWORD PTR [rsi]"},
		{"c5fd74c1", "vpcmpeqb %ymm1,%ymm0,%ymm0", "vpcmpeqb ymm0,ymm0,ymm1"},
		{"c5fdd7c1", "vpmovmskb %ymm1,%eax", "vpmovmskb eax,ymm1"},
		{"c4e27d78c0", "vpbroadcastb %xmm0,%ymm0", "vpbroadcastb ymm0,xmm0"},
		{"c4e27d17c0", "vptest %ymm0,%ymm0", "vptest ymm0,ymm0"},
		{"c5fdda0e", "vpminub (%rsi),%ymm0,%ymm1", "vpminub ymm1,ymm0,YMMWORD PTR [rsi]"},
		{"c4e270f3d1", "blsmsk %ecx,%ecx", ""},
		{"62b37d203fc200", "vpcmpeqb %ymm18,%ymm16,%k0", "vpcmpeqb k0,ymm16,ymm18"},
		{"0f01ee", "rdpkru", "rdpkru"},
	} {
		code := mustHex(t, tc.hex)
		for _, v := range []struct {
			syn  Syntax
			want string
		}{{SyntaxATT, tc.att}, {SyntaxIntel, tc.intel}} {
			if v.want == "" {
				continue
			}
			got := Decode(ArchX86_64, code, 0x1000, v.syn)
			if len(got) != 1 || got[0].Len != len(code) {
				t.Errorf("%s %s: decoded %d insts %+v, want one of length %d", tc.hex, v.syn, len(got), got, len(code))
				continue
			}
			if got[0].Text != v.want {
				t.Errorf("%s %s: got %q, want %q", tc.hex, v.syn, got[0].Text, v.want)
			}
		}
	}
}

func TestBranches(t *testing.T) {
	// call rel32; jne rel8 (backwards); jmp *%rax; ret
	code := mustHex(t, "e8 0b 00 00 00 75 f9 ff e0 c3")
	sym := func(a uint64) (string, bool) {
		if a == 0x401010 {
			return "inner", true
		}
		return "", false
	}
	got := DecodeWith(code, 0x401000, Options{Arch: ArchX86_64, Symbolize: sym})
	if len(got) != 4 {
		t.Fatalf("got %d insts", len(got))
	}
	c := got[0]
	if !c.IsCall || !c.HasTarget || c.Target != 0x401010 || c.Text != "call   0x401010 <inner>" {
		t.Errorf("call: %+v", c)
	}
	j := got[1]
	if !j.IsJump || !j.HasTarget || j.Target != 0x401000 || j.Text != "jne    0x401000" {
		t.Errorf("jne: %+v", j)
	}
	if ij := got[2]; !ij.IsJump || ij.HasTarget {
		t.Errorf("indirect jmp: %+v", ij)
	}
	if r := got[3]; !r.IsRet || r.Addr != 0x401009 {
		t.Errorf("ret: %+v", r)
	}
}

func TestDataRef(t *testing.T) {
	code := mustHex(t, "48 8d 3d f9 0f 00 00") // lea 0xff9(%rip),%rdi
	got := DecodeWith(code, 0x1000, Options{Arch: ArchX86_64, Symbolize: func(a uint64) (string, bool) {
		return "msg", a == 0x2000
	}})
	if len(got) != 1 || !got[0].HasDataRef || got[0].DataRef != 0x2000 {
		t.Fatalf("%+v", got)
	}
	if want := "lea    0xff9(%rip),%rdi        # 0x2000 <msg>"; got[0].Text != want {
		t.Errorf("got %q want %q", got[0].Text, want)
	}
}

func TestBadBytesAndResync(t *testing.T) {
	// 06 is invalid in 64-bit mode; then a nop, a truncated call at the end.
	code := mustHex(t, "06 06 90 e8 00 00")
	if got := Decode(ArchX86_64, mustHex(t, "e8 00 00"), 0, SyntaxATT); len(got) != 2 || !got[0].Bad {
		t.Errorf("truncated call: %+v", got)
	}
	got := Decode(ArchX86_64, code, 0x10, SyntaxATT)
	var texts []string
	total := 0
	for _, in := range got {
		texts = append(texts, in.Text)
		total += in.Len
		if in.Bad && in.Len != 1 {
			t.Errorf("bad inst of length %d", in.Len)
		}
	}
	if total != len(code) {
		t.Errorf("covered %d of %d bytes", total, len(code))
	}
	// The truncated call is one bad byte; "00 00" is then a valid add.
	want := []string{"(bad)", "(bad)", "nop", "(bad)", "add    %al,(%rax)"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("got %q want %q", texts, want)
	}
}

func TestVEXLength(t *testing.T) {
	for _, tc := range []struct {
		hex string
		n   int
	}{
		{"c5fe6f0e", 4},
		{"c5fe6f4e20", 5},
		{"c5fe6f8e00010000", 8},
		{"c4e27d7804 24", 6},
		{"c4e37d38c001", 6}, // vinserti128 imm8
		{"c5f9703e01", 5},   // vpshufd imm8
		{"c5fc77", 3},
		{"62e1fe286f06", 6},
		{"62f37d203f470200", 8},
		{"c5fc28058ff00000", 8},
	} {
		v, ok := parseVEX(mustHex(t, tc.hex))
		if !ok || v.length != tc.n {
			t.Errorf("%s: length %d ok=%v, want %d", tc.hex, v.length, ok, tc.n)
		}
	}
	// Unknown VEX opcode: length still right, text "(vex) ...".
	in, ok := decodeVEXFallback(mustHex(t, "c4e37dff c0 01"))
	if !ok || in.Len != 6 || !strings.HasPrefix(in.Text, "(vex)") {
		t.Errorf("fallback: %+v", in)
	}
	in, ok = decodeVEXFallback(mustHex(t, "c5fdd7c1"))
	if !ok || in.Text != "vpmovmskb" {
		t.Errorf("fallback table: %+v", in)
	}
}

func TestARM64(t *testing.T) {
	// stp x29, x30, [sp,#-16]!; bl +8; b.ne -4; ret
	code := mustHex(t, "fd7bbfa9 02000094 e1ffff54 c0035fd6")
	got := Decode(ArchARM64, code, 0x400000, SyntaxATT)
	if len(got) != 4 {
		t.Fatalf("got %d", len(got))
	}
	if !got[1].IsCall || got[1].Target != 0x40000c {
		t.Errorf("bl: %+v", got[1])
	}
	if !got[2].IsJump || got[2].Target != 0x400004 {
		t.Errorf("b.ne: %+v", got[2])
	}
	if !got[3].IsRet {
		t.Errorf("ret: %+v", got[3])
	}
	for i, want := range []string{"stp    x29, x30, [sp,#-16]!", "bl     0x40000c", "b.ne   0x400004", "ret"} {
		if got[i].Text != want {
			t.Errorf("arm64 inst %d: %q, want %q", i, got[i].Text, want)
		}
	}
	// An undefined word stays 4-byte aligned; a trailing partial word is
	// (bad) byte by byte.
	got = Decode(ArchARM64, mustHex(t, "00000000 c0035f"), 0, SyntaxATT)
	if len(got) != 4 || got[0].Len != 4 || !got[0].Bad || got[0].Text != ".inst  0x0" || got[1].Text != "(bad)" {
		t.Errorf("arm64 undefined: %+v", got)
	}
}

func TestUnknownArchAndEmpty(t *testing.T) {
	if got := Decode(ArchX86_64, nil, 0, SyntaxATT); len(got) != 0 {
		t.Error("empty input")
	}
	got := Decode(ArchUnknown, []byte{1, 2, 3}, 0, SyntaxATT)
	if len(got) != 3 || !got[0].Bad {
		t.Errorf("unknown arch: %+v", got)
	}
	got = DecodeWith(bytes.Repeat([]byte{0x90}, 100), 0, Options{Arch: ArchX86_64, MaxInsts: 10})
	if len(got) != 10 {
		t.Errorf("MaxInsts: %d", len(got))
	}
}

func TestMnemonic(t *testing.T) {
	for in, want := range map[string]string{
		"rep stos %rax,%es:(%rdi)": "stos",
		"notrack jmp *%rax":        "jmp",
		"data16 cs nopw 0x0(%rax)": "nopw",
		"ret":                      "ret",
		"push   %rbp":              "push",
		"":                         "",
	} {
		if got := Mnemonic(in); got != want {
			t.Errorf("Mnemonic(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzDecode checks that decoding arbitrary bytes never panics, covers
// every byte exactly once and produces sane instructions.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xc3}, uint8(0))
	f.Add([]byte{0xc5, 0xf8, 0x77, 0xc5, 0xfe, 0x6f, 0x0e}, uint8(1))
	f.Add([]byte{0x62, 0xb3, 0x7d, 0x20, 0x3f, 0xc2, 0x00}, uint8(0))
	f.Add([]byte{0xfd, 0x7b, 0xbf, 0xa9, 0x02, 0x00, 0x00, 0x94}, uint8(2))
	f.Fuzz(func(t *testing.T, code []byte, mode uint8) {
		arch := ArchX86_64
		if mode&2 != 0 {
			arch = ArchARM64
		}
		syn := Syntax(mode & 1)
		got := DecodeWith(code, 0x1000, Options{Arch: arch, Syntax: syn, Symbolize: func(a uint64) (string, bool) { return "f", a&1 == 0 }})
		off := 0
		for _, in := range got {
			if in.Addr != 0x1000+uint64(off) || in.Len <= 0 || in.Len > maxX86Len || len(in.Bytes) != in.Len {
				t.Fatalf("bad inst %+v at offset %d", in, off)
			}
			if in.Text == "" {
				t.Fatalf("empty text at offset %d", off)
			}
			off += in.Len
		}
		if off != len(code) {
			t.Fatalf("covered %d of %d bytes", off, len(code))
		}
	})
}

func BenchmarkDecodeX86(b *testing.B) {
	// A mix of common instructions, 1 KiB.
	unit := mustHex(b, "f30f1efa 55 4889e5 4883ec10 897dfc 8b45fc 83c001 c5fe6f0e c5fd74c1 c5fdd7c1 e8 00000000 75f0 0f1f4000 c9 c3")
	code := bytes.Repeat(unit, 1024/len(unit))
	b.ReportAllocs()
	b.SetBytes(int64(len(code)))
	for b.Loop() {
		Decode(ArchX86_64, code, 0x401000, SyntaxATT)
	}
}

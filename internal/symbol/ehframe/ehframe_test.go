package ehframe

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/testutil"
)

// funcs.c has static functions that stripping leaves without symbols and code in a
// separate section.
const funcsC = `
__attribute__((noinline)) static int square(int x) { return x * x + (x >> 3); }
__attribute__((noinline)) static long sum(int n) { long s = 0; for (int i = 0; i < n; i++) s += square(i); return s; }
__attribute__((noinline, section(".text.other"))) int other(int n) { return (int)sum(n) ^ 7; }
int main(int argc, char **argv) { (void)argv; return other(argc * 1000); }
`

// catch.cc catches an exception: its CIE names a personality routine and an LSDA ("zPLR").
const catchCC = `
#include <stdexcept>
__attribute__((noinline)) static int check(int n) { if (n > 3) throw std::runtime_error("big"); return n; }
int main(int argc, char **) { try { return check(argc); } catch (const std::exception &) { return 9; } }
`

// readelfRanges runs readelf --debug-dump=frames on an image and returns each FDE's
// pc=START..END, sorted as Parse sorts them.
func readelfRanges(t *testing.T, path string) []Range {
	t.Helper()
	out := testutil.Run(t, "", testutil.RequireTool(t, "readelf"), "--debug-dump=frames", path)
	re := regexp.MustCompile(`FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	var rs []Range
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		a, _ := strconv.ParseUint(m[1], 16, 64)
		b, _ := strconv.ParseUint(m[2], 16, 64)
		rs = append(rs, Range{a, b})
	}
	if len(rs) == 0 {
		t.Fatalf("readelf shows no FDE in %s:\n%s", path, out)
	}
	return normalize(rs)
}

func loadFile(t *testing.T, path string) []Range {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := Load(f)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return rs
}

// TestRangesMatchReadelf reads the FDE ranges of stripped programs built by gcc and g++ (PIE
// and not, a shared library, a personality routine in the CIE) and compares
// them with what readelf --debug-dump=frames shows.
func TestRangesMatchReadelf(t *testing.T) {
	dir := t.TempDir()
	c, cc := filepath.Join(dir, "funcs.c"), filepath.Join(dir, "catch.cc")
	if err := os.WriteFile(c, []byte(funcsC), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cc, []byte(catchCC), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		name, compiler string
		flags          []string
	}{
		{"pie", "gcc", []string{"-O2", "-s", c}},
		{"nopie", "gcc", []string{"-O1", "-s", "-no-pie", "-fno-pie", c}},
		{"lib.so", "gcc", []string{"-O2", "-s", "-shared", "-fPIC", c}},
		{"O0", "gcc", []string{"-O0", "-s", c}},
		{"catch", "g++", []string{"-O2", "-s", cc}},
	} {
		t.Run(b.name, func(t *testing.T) {
			path := testutil.CC(t, dir, b.name, b.compiler, b.flags...)
			if b.name == "catch" && !strings.Contains(testutil.Run(t, "", "readelf", "--debug-dump=frames", path), `"zPLR"`) {
				t.Fatal("g++ wrote no CIE with a personality routine")
			}
			want := readelfRanges(t, path)
			got := loadFile(t, path)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ranges %x, readelf shows %x", got, want)
			}
			if len(got) < 4 {
				t.Errorf("only %d ranges: %x", len(got), got)
			}
		})
	}
}

// TestSystemLibraryRanges compares with readelf on Debian's stripped liblzma, whose
// static functions no symbol covers.
func TestSystemLibraryRanges(t *testing.T) {
	const lib = "/lib/x86_64-linux-gnu/liblzma.so.5"
	testutil.RequireFile(t, lib, "liblzma5")
	want := readelfRanges(t, lib)
	if got := loadFile(t, lib); !reflect.DeepEqual(got, want) {
		t.Errorf("%d ranges, readelf shows %d; first differing: %v", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []Range) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return strconv.Itoa(i) + ": " + strings.Join([]string{hex(a[i]), hex(b[i])}, " vs ")
		}
	}
	return "one is a prefix of the other"
}

func hex(r Range) string {
	return strconv.FormatUint(r.Start, 16) + ".." + strconv.FormatUint(r.End, 16)
}

// ehBuilder writes .eh_frame entries by hand.
type ehBuilder struct{ b []byte }

// entry appends a length-prefixed entry and returns its offset.
func (e *ehBuilder) entry(body []byte) int {
	off := len(e.b)
	for (len(body)+4)%8 != 0 {
		body = append(body, 0) // DW_CFA_nop
	}
	e.b = binary.LittleEndian.AppendUint32(e.b, uint32(len(body)))
	e.b = append(e.b, body...)
	return off
}

// cie appends a CIE with augmentation aug and its data.
func (e *ehBuilder) cie(version byte, aug string, augData []byte) int {
	body := []byte{0, 0, 0, 0, version}
	body = append(body, aug...)
	body = append(body, 0, 1, 0x78) // code align 1, data align -8
	if version == 1 {
		body = append(body, 16)
	} else {
		body = append(body, 16) // uleb
	}
	if strings.HasPrefix(aug, "z") {
		body = append(body, byte(len(augData)))
	}
	body = append(body, augData...)
	return e.entry(body)
}

// fde appends an FDE of the CIE at ciePos whose pc_begin and pc_range are the bytes pc.
func (e *ehBuilder) fde(ciePos int, pc []byte) int {
	body := binary.LittleEndian.AppendUint32(nil, uint32(len(e.b)+4-ciePos))
	body = append(body, pc...)
	return e.entry(body)
}

// pcrel4 encodes start and size as pcrel|sdata4 for an FDE about to be appended at the
// end of e (its pc_begin field sits 8 bytes into it) in a section at secAddr.
func (e *ehBuilder) pcrel4(secAddr, start, size uint64) []byte {
	at := secAddr + uint64(len(e.b)) + 8
	b := binary.LittleEndian.AppendUint32(nil, uint32(int32(int64(start-at))))
	return binary.LittleEndian.AppendUint32(b, uint32(size))
}

func abs8(start, size uint64) []byte {
	b := binary.LittleEndian.AppendUint64(nil, start)
	return binary.LittleEndian.AppendUint64(b, size)
}

// TestParseEncodings reads FDEs of CIEs in the encodings and augmentations compilers and
// assemblers produce: pcrel sdata4 after a personality ("zPLR"), absolute pointers (no
// augmentation), "zR" of version 3 and version 4 CIEs, udata2, a signal frame ("zRS");
// nothing after the terminator.
func TestParseEncodings(t *testing.T) {
	const sec = 0x2000
	var e ehBuilder
	zplr := e.cie(1, "zPLR", []byte{0x9b, 0, 0, 0, 0, 0x1b, 0x1b}) // personality indirect|pcrel|sdata4, LSDA, FDE pcrel|sdata4
	e.fde(zplr, e.pcrel4(sec, 0x1000, 0x40))
	plain := e.cie(1, "", nil)
	e.fde(plain, abs8(0x1100, 0x20))
	v3 := e.cie(3, "zR", []byte{0x1b})
	e.fde(v3, e.pcrel4(sec, 0x1040, 0x10))
	v4 := append([]byte{0, 0, 0, 0, 4}, "zR\x00"...)
	v4 = append(v4, 8, 0, 1, 0x78, 16, 1, 0x02) // address size 8, segment 0; udata2
	v4pos := e.entry(v4)
	e.fde(v4pos, []byte{0x00, 0x12, 0x08, 0x00}) // 0x1200, 8 bytes
	// A signal frame's CIE: a letter after 'R' does not matter.
	sig := e.cie(1, "zRS", []byte{0x1b})
	e.fde(sig, e.pcrel4(sec, 0x1300, 0x30))
	// The CIE pointer counts back from the FDE: one that would point past it is wrong.
	e.fde(len(e.b)+16, e.pcrel4(sec, 0x1400, 0x30))
	e.cie(1, "zR", []byte{0x1b})
	e.b = append(e.b, 0, 0, 0, 0) // terminator
	e.fde(zplr, e.pcrel4(sec, 0x5000, 0x10))

	got, err := Parse(e.b, sec, 8)
	if err != nil {
		t.Fatal(err)
	}
	want := []Range{{0x1000, 0x1040}, {0x1040, 0x1050}, {0x1100, 0x1120}, {0x1200, 0x1208}, {0x1300, 0x1330}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ranges %x, want %x", got, want)
	}
	for _, c := range []struct {
		addr uint64
		want Range
		ok   bool
	}{
		{0xfff, Range{}, false},
		{0x1000, Range{0x1000, 0x1040}, true},
		{0x103f, Range{0x1000, 0x1040}, true},
		{0x1040, Range{0x1040, 0x1050}, true},
		{0x1050, Range{}, false},
		{0x132f, Range{0x1300, 0x1330}, true},
		{0x1330, Range{}, false},
	} {
		if r, ok := Find(got, c.addr); r != c.want || ok != c.ok {
			t.Errorf("Find(%#x) = %x %v, want %x %v", c.addr, r, ok, c.want, c.ok)
		}
	}
}

// TestParseDamage keeps what can be read: an FDE whose CIE is not one, an unknown
// augmentation or encoding, an empty range, overlapping FDEs, and an entry running past the
// section's end.
func TestParseDamage(t *testing.T) {
	const sec = 0x4000
	var e ehBuilder
	good := e.cie(1, "zR", []byte{0x1b})
	e.fde(good, e.pcrel4(sec, 0x1000, 0x100))
	e.fde(good, e.pcrel4(sec, 0x1080, 0x100))  // inside the first: dropped
	e.fde(good, e.pcrel4(sec, 0x1000, 0x10))   // same start, shorter: dropped
	e.fde(good+4, e.pcrel4(sec, 0x2000, 0x10)) // points into the CIE
	e.fde(1<<20, e.pcrel4(sec, 0x2100, 0x10))  // before the section
	odd := e.cie(1, "zX", []byte{0x1b})
	e.fde(odd, e.pcrel4(sec, 0x2200, 0x10))
	datarel := e.cie(1, "zR", []byte{0x3b})
	e.fde(datarel, e.pcrel4(sec, 0x2300, 0x10))
	badFormat := e.cie(1, "zR", []byte{0x1f})
	e.fde(badFormat, e.pcrel4(sec, 0x2400, 0x10))
	e.fde(good, e.pcrel4(sec, 0x2500, 0)) // empty
	e.fde(good, e.pcrel4(sec, 0x3000, 0x20))
	// A 64-bit entry is skipped whole.
	e.b = binary.LittleEndian.AppendUint32(e.b, 0xffffffff)
	e.b = binary.LittleEndian.AppendUint64(e.b, 8)
	e.b = append(e.b, make([]byte, 8)...)
	e.fde(good, e.pcrel4(sec, 0x3100, 0x20))
	whole := append([]byte(nil), e.b...)
	e.b = binary.LittleEndian.AppendUint32(e.b, 1000) // runs past the end
	e.b = append(e.b, 1, 2, 3)

	want := []Range{{0x1000, 0x1100}, {0x3000, 0x3020}, {0x3100, 0x3120}}
	got, err := Parse(whole, sec, 8)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ranges %x, %v; want %x", got, err, want)
	}
	got, err = Parse(e.b, sec, 8)
	if err != ErrDamaged || !reflect.DeepEqual(got, want) {
		t.Errorf("truncated: ranges %x, %v; want %x and %v", got, err, want, ErrDamaged)
	}
	if _, err := Parse(make([]byte, MaxSection+1), 0, 8); err == nil {
		t.Error("an oversized section was read")
	}
}

// TestParse32 reads absolute 4-byte pointers of an ELF32 image.
func TestParse32(t *testing.T) {
	var e ehBuilder
	c := e.cie(1, "", nil)
	pc := binary.LittleEndian.AppendUint32(nil, 0x8048000)
	pc = binary.LittleEndian.AppendUint32(pc, 0x30)
	e.fde(c, pc)
	got, err := Parse(e.b, 0x9000, 4)
	if want := []Range{{0x8048000, 0x8048030}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ranges %x, %v; want %x", got, err, want)
	}
}

// FuzzParse reads arbitrary bytes as an .eh_frame: no panic, and ranges that are sorted,
// disjoint, not empty, no more than the bytes could describe, each found by Find.
func FuzzParse(f *testing.F) {
	var e ehBuilder
	c := e.cie(1, "zPLR", []byte{0x9b, 0, 0, 0, 0, 0x1b, 0x1b})
	e.fde(c, e.pcrel4(0x2000, 0x1000, 0x40))
	e.fde(c, e.pcrel4(0x2000, 0x1020, 0x40))
	f.Add(e.b, uint64(0x2000), false)
	f.Fuzz(func(t *testing.T, data []byte, secAddr uint64, ptr4 bool) {
		size := 8
		if ptr4 {
			size = 4
		}
		rs, _ := Parse(data, secAddr, size)
		if len(rs) > len(data)/10+1 {
			t.Fatalf("%d ranges from %d bytes", len(rs), len(data))
		}
		for i, r := range rs {
			if r.Start >= r.End || r.End-r.Start > maxRange || i > 0 && r.Start < rs[i-1].End {
				t.Fatalf("range %d %x after %x", i, r, rs[max(i-1, 0)])
			}
			if got, ok := Find(rs, r.End-1); !ok || got != r {
				t.Fatalf("Find(%#x) = %x %v, want %x", r.End-1, got, ok, r)
			}
		}
	})
}

package dwarfenc

import "testing"

func TestLEB128(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		u    uint64
		s    int64
		size int
	}{
		{[]byte{0x02}, 2, 2, 1},
		{[]byte{0x7f}, 127, -1, 1},
		{[]byte{0x80, 0x01}, 128, 128, 2},
		{[]byte{0xe5, 0x8e, 0x26}, 624485, 624485, 3},
		{[]byte{0xc0, 0xbb, 0x78}, 1973696, -123456, 3},
	} {
		r := Reader{B: c.b}
		if v := r.Uleb(); v != c.u || r.Off != c.size || r.Bad {
			t.Errorf("Uleb(% x) = %d (off %d, bad %v), want %d", c.b, v, r.Off, r.Bad, c.u)
		}
		r = Reader{B: c.b}
		if v := r.Sleb(); v != c.s || r.Off != c.size || r.Bad {
			t.Errorf("Sleb(% x) = %d (off %d, bad %v), want %d", c.b, v, r.Off, r.Bad, c.s)
		}
	}
	r := Reader{B: []byte{0x80, 0x80}}
	if r.Uleb(); !r.Bad {
		t.Error("a LEB128 number cut short was read")
	}
}

func TestPtr(t *testing.T) {
	b := []byte{0xf0, 0xff, 0xff, 0xff, 0x10, 0, 0, 0}
	r := Reader{B: b}
	if v := r.Ptr(PEPcrel|PESdata4, 0x1000, 8); v != 0x1000-16 || r.Off != 4 {
		t.Errorf("pc-relative sdata4: %#x", v)
	}
	if v := r.Ptr(PEUdata4, 0, 8); v != 0x10 {
		t.Errorf("udata4: %#x", v)
	}
	if v := r.Ptr(PEOmit, 0, 8); v != 0 || r.Bad {
		t.Errorf("omit: %#x, bad %v", v, r.Bad)
	}
	r = Reader{B: b}
	if r.Ptr(PEDatarel|PEUdata4, 0, 8); !r.Bad {
		t.Error("a data-relative pointer was read")
	}
	r = Reader{B: b[:2]}
	if r.Ptr(PEAbsptr, 0, 8); !r.Bad {
		t.Error("a pointer past the bytes was read")
	}
}

// FuzzReader reads arbitrary bytes every way: never a panic, never past the bytes.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0x80, 0x80, 0x80, 0x01, 0x1b, 0xff, 0xff, 0xff, 0x7f}, byte(0x1b))
	f.Add([]byte{0xff}, byte(0x00))
	f.Fuzz(func(t *testing.T, b []byte, enc byte) {
		r := Reader{B: b}
		for range 64 {
			r.Uleb()
			r.Sleb()
			r.Ptr(enc, 0x1000, 8)
			r.Fixed(4)
			if r.Off > len(b) {
				t.Fatalf("read to %d of %d bytes", r.Off, len(b))
			}
		}
	})
}

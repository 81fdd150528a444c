package elfsym

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// tinyInline builds the tables of one function (main.f at 0x1000, 0x100
// bytes) whose first 0x10 bytes run inlined code of main.g, called from
// main.f+0x20.
func tinyInline() (pclntable, pctab, gofunc, names []byte) {
	le := binary.LittleEndian
	pclntable = le.AppendUint32(pclntable, 0)     // entry of main.f
	pclntable = le.AppendUint32(pclntable, 16)    // its _func offset
	pclntable = le.AppendUint32(pclntable, 0x100) // end
	pclntable = le.AppendUint32(pclntable, 0)
	fn := make([]byte, 44)
	le.PutUint32(fn[28:], 3) // npcdata
	fn[43] = 4               // nfuncdata
	pclntable = append(pclntable, fn...)
	for _, v := range []uint32{0, 0, 1, ^uint32(0), ^uint32(0), ^uint32(0), 0} {
		pclntable = le.AppendUint32(pclntable, v)
	}
	// Inline index: 0 for [0, 0x10), -1 for [0x10, 0x20).
	pctab = []byte{0, 2, 0x10, 1, 0x10, 0}
	gofunc = make([]byte, 16)
	le.PutUint32(gofunc[4:], 7)    // name: main.g
	le.PutUint32(gofunc[8:], 0x20) // call site
	names = []byte("main.f\x00main.g\x00")
	return
}

func newTinyInline(pclntable, pctab, gofunc, names []byte) *goInline {
	return &goInline{bo: binary.LittleEndian, ptr: 8, quantum: 1, textStart: 0x1000, nfunc: 1,
		pclntable: pclntable, pctab: pctab, gofunc: gofunc, funcnames: names}
}

func TestInlineChain(t *testing.T) {
	g := newTinyInline(tinyInline())
	tests := []struct {
		pc    uint64
		names string
		outer string
	}{
		{0x1005, "[main.g] [4128]", "main.f"},
		{0x1015, "[] []", "main.f"},
		{0x0fff, "[] []", ""},
	}
	for _, tt := range tests {
		names, sites, outer := g.chain(tt.pc)
		if got := fmt.Sprint(names, " ", sites); got != tt.names || outer != tt.outer {
			t.Errorf("chain(%#x) = %s %q, want %s %q", tt.pc, got, outer, tt.names, tt.outer)
		}
	}
}

func FuzzGoInline(f *testing.F) {
	a, b, c, d := tinyInline()
	f.Add(a, b, c, d, uint64(0x1005))
	f.Fuzz(func(t *testing.T, pclntable, pctab, gofunc, names []byte, pc uint64) {
		g := newTinyInline(pclntable, pctab, gofunc, names)
		g.nfunc = len(pclntable) / 8
		names2, sites, _ := g.chain(pc)
		if len(names2) != len(sites) || len(names2) > 64 {
			t.Fatalf("%d names, %d sites", len(names2), len(sites))
		}
	})
}

// TestWriteInlineSeeds regenerates testdata/fuzz/FuzzGoInline when
// STAX_WRITE_SEEDS is set.
func TestWriteInlineSeeds(t *testing.T) {
	if os.Getenv("STAX_WRITE_SEEDS") == "" {
		t.Skip("set STAX_WRITE_SEEDS=1 to regenerate the seed corpus")
	}
	a, b, c, d := tinyInline()
	dir := filepath.Join("testdata", "fuzz", "FuzzGoInline")
	os.MkdirAll(dir, 0o755)
	content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n[]byte(%q)\n[]byte(%q)\n[]byte(%q)\nuint64(%d)\n", a, b, c, d, 0x1005)
	if err := os.WriteFile(filepath.Join(dir, "one-inlined-call"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

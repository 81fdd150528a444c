package jit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// seedDumps returns the jitdump seeds: valid files of both byte orders,
// truncated ones, and ones with huge sizes.
func seedDumps() map[string][]byte {
	full := func(o order) []byte {
		return newDump(o, 7, 0).
			debug(1, 0x1000, dbgEntry{0x1040, 3, "a.js"}, dbgEntry{0x1048, 4, "\xff"}).
			unwind(1, []byte{1, 2, 3, 4}).
			load(1, 0x1000, "f", bytes.Repeat([]byte{0x90}, 16)).
			methodID(1, 0x1000, 16, 1).
			inline(1, 2, 1, 0x1004, 4, "g", "b.js").
			inline(1, 1, 2, 0x1004, 4, "cycle", "").
			move(2, 0x1000, 0x2000, 16).
			load(3, 0x2008, "h", []byte{0xc3}).
			unload(4, 0x2008, 1).
			rec(55, 5, []byte("unknown")).
			close(6).bytes()
	}
	le, be := full(binary.LittleEndian), full(binary.BigEndian)
	hugeCode := newDump(binary.LittleEndian, 7, 0).load(1, 0x1000, "f", []byte{1}).bytes()
	binary.LittleEndian.PutUint64(hugeCode[HeaderSize+16+24:], 1<<62)
	hugeEntries := newDump(binary.BigEndian, 7, 0).debug(1, 0x1000, dbgEntry{0x1000, 1, "x"}).bytes()
	binary.BigEndian.PutUint64(hugeEntries[HeaderSize+16+8:], 1<<60)
	hugeRecord := newDump(binary.LittleEndian, 7, 0).close(1).bytes()
	binary.LittleEndian.PutUint32(hugeRecord[HeaderSize+4:], 0xffffffff)
	hugeHeader := bytes.Clone(le)
	binary.LittleEndian.PutUint32(hugeHeader[8:], 0xffffffff)
	return map[string][]byte{
		"valid-le":       le,
		"valid-be":       be,
		"truncated-le":   le[:len(le)-5],
		"truncated-hdr":  be[:20],
		"huge-code":      hugeCode,
		"huge-entries":   hugeEntries,
		"huge-record":    hugeRecord,
		"huge-header":    hugeHeader,
		"tsc-timestamps": newDump(binary.LittleEndian, 7, FlagArchTimestamp).bytes(),
	}
}

func seedMaps() map[string][]byte {
	return map[string][]byte{
		"valid":     []byte("7f0000001000 40 LazyCompile:*f /a.js:1\n0x7f0000001040 0x10 g with spaces\r\n"),
		"overlap":   []byte("1000 100 a\n1080 100 b\n1000 100 a\n"),
		"bad-lines": []byte("zz 10 x\n\n1 2\n10 ffffffffffffffff wrap\n"),
		"partial":   []byte("1000 10 a\n2000 1"),
		"huge-size": []byte("0 ffffffffffffffff everything\n1000 10 inside\n"),
		// More than the fuzz budget keeps: many lines, and names far longer than usual.
		"over-budget": overBudgetMap(),
	}
}

// fuzzBudget is the memory the fuzzed tables may keep.
const fuzzBudget = 16 << 10

func overBudgetMap() []byte {
	var b []byte
	for i := range 200 {
		b = fmt.Appendf(b, "%x 10 f%d\n", 0x1000+16*i, i)
	}
	return fmt.Appendf(b, "9000 10 %s\n", strings.Repeat("long", 8<<10))
}

func FuzzParseHeader(f *testing.F) {
	for _, b := range seedDumps() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err == nil && (h.TotalSize < HeaderSize || h.TotalSize > MaxHeaderSize || h.Order == nil) {
			t.Fatalf("accepted bad header %+v", h)
		}
	})
}

// FuzzParseRecords parses a whole file and feeds what it yields to a
// table, then queries it.
func FuzzParseRecords(f *testing.F) {
	for _, b := range seedDumps() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil || int(h.TotalSize) > len(b) {
			return
		}
		body := b[h.TotalSize:]
		recs, n, need, err := ParseRecords(h.Order, body, nil)
		if n < 0 || n > len(body) || (err == nil && n < len(body) && need == 0) {
			t.Fatalf("consumed %d of %d, need %d, err %v", n, len(body), need, err)
		}
		tab := NewTable()
		tab.Apply(1, SourceJitdump, recs)
		for _, r := range recs {
			if r.Load == nil {
				continue
			}
			for _, ts := range []uint64{0, r.Timestamp, r.Timestamp + 1, ^uint64(0)} {
				fn, ok := tab.Lookup(r.Load.CodeAddr, ts)
				if !ok {
					continue
				}
				tab.LineAt(fn, r.Load.CodeAddr)
				tab.Inlines(fn)
				if len(tab.InlineChain(fn, r.Load.CodeAddr)) > MaxInlineDepth {
					t.Fatal("inline chain too deep")
				}
			}
			tab.Generation(r.Timestamp)
		}
		tab.Reset(1)
		if len(tab.Funcs()) != 0 {
			t.Fatal("functions left after reset")
		}
	})
}

func FuzzParsePerfMap(f *testing.F) {
	for _, b := range seedMaps() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		es, n, bad := ParsePerfMap(b, nil)
		if n < 0 || n > len(b) || bad < 0 {
			t.Fatalf("consumed %d of %d, bad %d", n, len(b), bad)
		}
		budget := NewBudget(fuzzBudget)
		tab := NewTableWithin(budget)
		tab.AddPerfMap(2, es, 5)
		for _, e := range es {
			if fn, ok := tab.Lookup(e.Start, 1); ok && !fn.Contains(e.Start) {
				t.Fatalf("lookup %#x returned %+v", e.Start, fn)
			}
		}
		if tab.Bytes() > fuzzBudget || budget.Used() != tab.Bytes() {
			t.Fatalf("table keeps %d bytes, budget used %d of %d", tab.Bytes(), budget.Used(), fuzzBudget)
		}
		tab.Reset(2)
		if budget.Used() != 0 {
			t.Fatalf("budget used %d after reset", budget.Used())
		}
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz from the seeds above when
// STAX_WRITE_FUZZ_CORPUS=1.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("STAX_WRITE_FUZZ_CORPUS") != "1" {
		t.Skip("set STAX_WRITE_FUZZ_CORPUS=1 to regenerate testdata/fuzz")
	}
	write := func(fuzzer string, seeds map[string][]byte) {
		dir := filepath.Join("testdata", "fuzz", fuzzer)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range seeds {
			data := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("FuzzParseHeader", seedDumps())
	write("FuzzParseRecords", seedDumps())
	write("FuzzParsePerfMap", seedMaps())
}

// FuzzParseStaxLost: the header extension of stax's collector parses or is refused, never
// panics, in either byte order.
func FuzzParseStaxLost(f *testing.F) {
	f.Add([]byte("STXL\x18\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x1c\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			if l, ok := ParseStaxLost(o, b); ok && (len(b) < jitformat.StaxLostSize || l.Magic != jitformat.StaxLostMagic) {
				t.Fatalf("accepted %+v from %d bytes", l, len(b))
			}
		}
	})
}

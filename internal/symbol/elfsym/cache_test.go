package elfsym

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// TestCacheRoundTrip: an image read back from its saved form has the same symbols, answers
// lookups the same, and can still take a debug file's symbols.
func TestCacheRoundTrip(t *testing.T) {
	im, err := Load(bytes.NewReader(tinyELF([]tinySym{
		{name: "alias_local", value: 0x401000, size: 0x20, bind: 0, typ: sttFunc, sectionIdx: 1},
		{name: "first@@VER_2", value: 0x401000, size: 0x20, bind: stbGlobal, typ: sttFunc, sectionIdx: 1},
		{name: "zero", value: 0x401040, size: 0, bind: stbGlobal, typ: sttFunc, sectionIdx: 1},
		{name: "far", value: 0x402100, size: 0x10, bind: stbWeak, typ: sttFunc, sectionIdx: 2},
	})), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteCache(&buf, im, []byte("meta")); err != nil {
		t.Fatal(err)
	}
	got, meta, err := DecodeCache(buf.Bytes(), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if string(meta) != "meta" || !got.FromCache() || im.FromCache() {
		t.Fatalf("meta %q, from the cache %v / %v", meta, got.FromCache(), im.FromCache())
	}
	if !bytes.Equal(got.BuildID, im.BuildID) || got.Machine != im.Machine || got.Type != im.Type ||
		!slices.Equal(got.Loads, im.Loads) || got.DebugLink != im.DebugLink || got.DebugLinkCRC != im.DebugLinkCRC ||
		got.HasDWARF != im.HasDWARF || got.IsGo != im.IsGo || got.Path != im.Path {
		t.Fatalf("read back %+v, saved %+v", got, im)
	}
	for a := uint64(0x400ff0); a < 0x402200; a++ {
		s1, ok1 := im.Lookup(a)
		s2, ok2 := got.Lookup(a)
		if s1 != s2 || ok1 != ok2 {
			t.Fatalf("%#x: read back %+v %v, saved %+v %v", a, s2, ok2, s1, ok1)
		}
	}
	if !slices.Equal(got.Symbols(), im.Symbols()) {
		t.Fatalf("symbols read back %+v, saved %+v", got.Symbols(), im.Symbols())
	}
	dbg, err := Load(bytes.NewReader(tinyELF([]tinySym{
		{name: "hidden_static", value: 0x401080, size: 0x10, bind: 0, typ: sttFunc, sectionIdx: 1},
	})), "tiny.debug")
	if err != nil {
		t.Fatal(err)
	}
	im.Merge(dbg)
	got.Merge(dbg)
	if !slices.Equal(got.Symbols(), im.Symbols()) {
		t.Fatalf("merged symbols read back %+v, saved %+v", got.Symbols(), im.Symbols())
	}
	if s, ok := got.Lookup(0x401088); !ok || s.Name != "hidden_static" {
		t.Fatalf("after merge: %+v %v", s, ok)
	}
	for n := range buf.Len() {
		if _, _, err := DecodeCache(buf.Bytes()[:n], "tiny"); !errors.Is(err, ErrCache) {
			t.Fatalf("%d of %d bytes: %v", n, buf.Len(), err)
		}
	}
}

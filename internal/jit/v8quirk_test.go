package jit

import (
	"encoding/binary"
	"testing"
)

// TestDebugInfoFreedNameResync: V8 has written debug entries whose file name is a freed
// buffer, with a NUL among its first bytes; the parser must not fall out of step, and the
// table names such entries after the script in the V8 function name.
func TestDebugInfoFreedNameResync(t *testing.T) {
	const code = 0x7f0000001000
	garbage := []byte{0xc6, 0xb6, 0x03, 0x00, 0x00, 0x30, 0xac, 0x27, 'c', 'h', '.', 'j', 's'}
	var body []byte
	le := binary.LittleEndian
	body = le.AppendUint64(body, code)
	body = le.AppendUint64(body, 3)
	for i, line := range []uint32{1, 2, 3} {
		body = le.AppendUint64(body, code+0x40+uint64(i)*8) // V8's +0x40
		body = le.AppendUint32(body, line)
		body = le.AppendUint32(body, 13)
		body = append(body, garbage...)
		body = append(body, 0)
	}
	rec := le.AppendUint32(nil, uint32(RecCodeDebugInfo))
	rec = le.AppendUint32(rec, uint32(16+len(body)))
	rec = le.AppendUint64(rec, 5)
	rec = append(rec, body...)
	recs, consumed, _, err := ParseRecords(le, rec, nil)
	if err != nil || consumed != len(rec) || len(recs) != 1 {
		t.Fatalf("parse: %v, consumed %d of %d, %d records", err, consumed, len(rec), len(recs))
	}
	d := recs[0].Debug
	if len(d.Entries) != 3 {
		t.Fatalf("%d entries, want 3", len(d.Entries))
	}
	for i, e := range d.Entries {
		if e.Line != uint32(i+1) || e.File != "" || e.Addr != code+0x40+uint64(i)*8 {
			t.Errorf("entry %d = %+v", i, e)
		}
	}
	lines, quirk := linesFor(d, code, 0x100, scriptOf("JS:*fib /app/bench.js:1:13"))
	if !quirk || len(lines) != 3 || lines[0].File != "/app/bench.js" || lines[2].Line != 3 || lines[0].Addr != code {
		t.Errorf("lines = %+v (quirk %v)", lines, quirk)
	}
}

func TestScriptOf(t *testing.T) {
	for in, want := range map[string]string{
		"JS:*fib /app/bench.js:1:13":         "/app/bench.js",
		"JS:~ node:internal/main:2:3":        "node:internal/main",
		"JS:^f /a b/c.js:7":                  "/a b/c.js",
		"Builtin:ArgumentsAdaptorTrampoline": "",
		"jitted_func1":                       "",
	} {
		if got := scriptOf(in); got != want {
			t.Errorf("scriptOf(%q) = %q, want %q", in, got, want)
		}
	}
}

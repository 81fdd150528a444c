package jit

import (
	"bytes"
	"fmt"
	"strconv"
)

// Bounds applied to perf map files.
const (
	// MaxPerfMapLine bounds the length of one perf map line; longer lines
	// are skipped as bad.
	MaxPerfMapLine = 64 << 10
	// MaxPerfMapEntries bounds the number of entries taken from one file.
	MaxPerfMapEntries = 4 << 20
)

// PerfMapEntry is one line of a perf map: a function at [Start, Start+Size).
type PerfMapEntry struct {
	Start, Size uint64
	Name        string
}

// ParsePerfMapLine decodes one perf map line (without its newline):
// "START SIZE name", START and SIZE in hex with or without 0x, the name
// being the rest of the line with trailing whitespace trimmed.
func ParsePerfMapLine(line []byte) (PerfMapEntry, error) {
	var e PerfMapEntry
	line = bytes.TrimRight(line, " \t\r\n")
	if len(line) > MaxPerfMapLine {
		return e, fmt.Errorf("parse perf map line: too long (%d bytes)", len(line))
	}
	startField, rest, ok := cutField(line)
	if !ok {
		return e, fmt.Errorf("parse perf map line: missing size")
	}
	sizeField, name, ok := cutField(rest)
	if !ok || len(name) == 0 {
		return e, fmt.Errorf("parse perf map line: missing name")
	}
	var err error
	if e.Start, err = parseHex(startField); err != nil {
		return e, fmt.Errorf("parse perf map start: %w", err)
	}
	if e.Size, err = parseHex(sizeField); err != nil {
		return e, fmt.Errorf("parse perf map size: %w", err)
	}
	if e.Start+e.Size < e.Start {
		return e, fmt.Errorf("parse perf map line: range %#x+%#x wraps", e.Start, e.Size)
	}
	e.Name = string(name)
	return e, nil
}

// cutField splits off the first space-separated field, skipping leading
// blanks, and returns the rest with its leading blanks removed.
func cutField(b []byte) (field, rest []byte, ok bool) {
	b = bytes.TrimLeft(b, " \t")
	i := bytes.IndexAny(b, " \t")
	if i <= 0 {
		return b, nil, false
	}
	return b[:i], bytes.TrimLeft(b[i:], " \t"), true
}

func parseHex(b []byte) (uint64, error) {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		b = b[2:]
	}
	if len(b) == 0 || len(b) > 16 {
		return 0, fmt.Errorf("bad hex number %q", b)
	}
	return strconv.ParseUint(string(b), 16, 64)
}

// ParsePerfMap decodes the whole lines at the start of b, appending good
// entries to out. It returns the entries, the number of bytes consumed
// (through the last newline), and the number of bad lines skipped. A
// trailing line without a newline is not consumed unless it is already
// longer than MaxPerfMapLine, in which case it is consumed and counted as
// bad (the caller should then skip up to the next newline; see
// PerfMapTailer).
func ParsePerfMap(b []byte, out []PerfMapEntry) (entries []PerfMapEntry, consumed int, bad int) {
	entries = out
	for consumed < len(b) {
		rest := b[consumed:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(rest) > MaxPerfMapLine {
				return entries, len(b), bad + 1
			}
			return entries, consumed, bad
		}
		line := rest[:i]
		consumed += i + 1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(entries) >= MaxPerfMapEntries {
			bad++
			continue
		}
		e, err := ParsePerfMapLine(line)
		if err != nil {
			bad++
			continue
		}
		entries = append(entries, e)
	}
	return entries, consumed, bad
}

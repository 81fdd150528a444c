// Package kallsyms parses the kernel symbol table exported by
// /proc/kallsyms and resolves kernel text addresses to function names for
// stax. Only text symbols (types t, T, w, W) are kept.
package kallsyms

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Default path of the kernel symbol table.
const DefaultPath = "/proc/kallsyms"

// Limits applied while parsing.
const (
	MaxLineLen = 4096      // longest accepted line, in bytes
	MaxLines   = 8 << 20   // most lines read
	MaxBytes   = 256 << 20 // most bytes read
	// LastSymbolSpan bounds how far the highest symbol (and the last
	// symbol of each module) extends when nothing follows it.
	LastSymbolSpan = 64 << 10
)

// ErrRestricted is returned when every address in the table reads as zero,
// which the kernel does for readers that kernel.kptr_restrict (or missing
// CAP_SYSLOG) denies.
var ErrRestricted = errors.New("all kernel symbol addresses are zero: access is restricted by the kernel.kptr_restrict sysctl (set it to 0 or run with CAP_SYSLOG)")

// Symbol is one kernel text symbol.
type Symbol struct {
	Addr   uint64
	Name   string
	Module string // module name without brackets, "" for the core kernel
	Type   byte   // t, T, w or W
	end    uint64
}

// End returns the address just past the symbol: the next symbol's address,
// or Addr+LastSymbolSpan for the last one.
func (s Symbol) End() uint64 { return s.end }

// String formats the symbol as perf does, e.g. "ext4_file_open [ext4]".
func (s Symbol) String() string {
	if s.Module == "" {
		return s.Name
	}
	return s.Name + " [" + s.Module + "]"
}

// Table is a sorted set of kernel text symbols. It is immutable after
// construction and safe for concurrent use.
type Table struct {
	syms []Symbol
}

// Load reads and parses the table at path (usually [DefaultPath]).
func Load(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open kallsyms: %w", err)
	}
	defer f.Close()
	t, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return t, nil
}

// Parse parses kallsyms text ("addr type name [module]" per line). A kernel lists about
// 100,000-200,000 symbols and stax loads them on every run, so the text is read whole, the
// symbols are allocated once for its line count, lines are split in place and every name is
// a slice of one string.
func Parse(r io.Reader) (*Table, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("parse kallsyms: %w", err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("parse kallsyms: more than %d bytes", MaxBytes)
	}
	text := string(data)
	nl := strings.Count(text, "\n") + 1
	if nl > MaxLines {
		return nil, fmt.Errorf("parse kallsyms: more than %d lines", MaxLines)
	}
	syms := make([]Symbol, 0, nl)
	var fields [4]string // a line's first four fields
	nonzero, total := false, 0
	names := map[string]string{} // interns module names
	for lines := 1; len(text) > 0; lines++ {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if len(line) > MaxLineLen {
			return nil, fmt.Errorf("parse kallsyms: line %d: line too long (over %d bytes)", lines, MaxLineLen)
		}
		n := splitFields(line, &fields)
		if n == 0 {
			continue
		}
		if n < 3 || len(fields[1]) != 1 {
			return nil, fmt.Errorf("parse kallsyms: line %d: malformed entry %.80q", lines, line)
		}
		addr, ok := parseHex(fields[0])
		if !ok {
			return nil, fmt.Errorf("parse kallsyms: line %d: bad address %.40q", lines, fields[0])
		}
		total++
		if addr != 0 {
			nonzero = true
		}
		typ := fields[1][0]
		switch typ {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		var mod string
		if n >= 4 {
			m := fields[3]
			if len(m) < 2 || m[0] != '[' || m[len(m)-1] != ']' {
				return nil, fmt.Errorf("parse kallsyms: line %d: bad module field %.80q", lines, m)
			}
			m = m[1 : len(m)-1]
			var ok bool
			if mod, ok = names[m]; !ok {
				mod = strings.Clone(m)
				names[mod] = mod
			}
		}
		syms = append(syms, Symbol{Addr: addr, Name: fields[2], Module: mod, Type: typ})
	}
	if total > 0 && !nonzero {
		return nil, ErrRestricted
	}
	return newTable(syms), nil
}

// splitFields puts up to four whitespace-separated fields of line in f and returns how
// many it found (more than four count as four).
func splitFields(line string, f *[4]string) int {
	n := 0
	for i := 0; i < len(line) && n < len(f); {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		f[n] = line[i:j]
		n++
		i = j
	}
	return n
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// parseHex parses a hexadecimal address of 1 to 16 digits.
func parseHex(b string) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

func newTable(syms []Symbol) *Table {
	slices.SortStableFunc(syms, func(a, b Symbol) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		// Prefer global over local, then the first listed.
		return rank(a.Type) - rank(b.Type)
	})
	// Keep one symbol per address.
	syms = slices.CompactFunc(syms, func(a, b Symbol) bool { return a.Addr == b.Addr })
	for i := range syms {
		end := syms[i].Addr + LastSymbolSpan
		if end < syms[i].Addr {
			end = ^uint64(0)
		}
		if i+1 < len(syms) && (syms[i+1].Module == syms[i].Module || syms[i+1].Addr < end) {
			end = syms[i+1].Addr
		}
		syms[i].end = end
	}
	return &Table{syms: slices.Clip(syms)}
}

func rank(t byte) int {
	switch t {
	case 'T':
		return 0
	case 'W':
		return 1
	case 't':
		return 2
	}
	return 3
}

// Len returns the number of symbols.
func (t *Table) Len() int { return len(t.syms) }

// Symbols returns the sorted symbols; the slice must not be modified.
func (t *Table) Symbols() []Symbol { return t.syms }

// Lookup returns the symbol containing addr.
func (t *Table) Lookup(addr uint64) (Symbol, bool) {
	i, _ := slices.BinarySearchFunc(t.syms, addr, func(s Symbol, a uint64) int {
		switch {
		case s.Addr < a:
			return -1
		case s.Addr > a:
			return 1
		}
		return 0
	})
	// i is the first symbol with Addr >= addr.
	if i < len(t.syms) && t.syms[i].Addr == addr {
		return t.syms[i], true
	}
	if i == 0 {
		return Symbol{}, false
	}
	s := t.syms[i-1]
	if addr >= s.end {
		return Symbol{}, false
	}
	return s, true
}

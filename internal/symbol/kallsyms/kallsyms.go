// Package kallsyms parses the kernel symbol table exported by
// /proc/kallsyms and resolves kernel text addresses to function names for
// stax. Only text symbols (types t, T, w, W) are kept.
package kallsyms

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
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
	ents    [][]entry // chunks of entChunk symbols, the last one possibly shorter
	raw     []byte    // or, read from a mapped cache, the symbols in its format (entryBytes each)
	n       int       // symbols in all
	names   []string  // chunks of names, back to back, of up to nameChunk bytes
	modules []string  // modules[entry.mod]; modules[0] is "" (the core kernel)
	cached  bool      // read from a saved copy (LoadCached)
}

// The symbols and their names are kept in chunks, so that growing the table as lines come
// copies nothing.
const (
	entShift  = 12
	entChunk  = 1 << entShift
	nameChunk = 64 << 10
)

// entry is one symbol of a Table: 24 bytes where a Symbol takes 56, so that the 100,000 or
// more symbols of a kernel cost a few MiB.
type entry struct {
	addr uint64
	name uint32 // index in Table.names << 16 | offset in that chunk
	nlen uint16
	mod  uint16
	typ  byte
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
// 100,000-200,000 symbols and stax loads them on every run that meets a kernel frame, so the
// text is read line by line through one small buffer, only text symbols are kept, and their
// names are copied into one arena.
func Parse(r io.Reader) (*Table, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxBytes+1), 64<<10)
	var (
		ents    [][]entry
		cur     []entry
		names   []string
		curName strings.Builder
		count   int
		modules = []string{""}
		modIdx  = map[string]uint16{}
		fields  [4][]byte // a line's first four fields
		nonzero bool
		total   int
		read    int
	)
	for lines := 1; ; lines++ {
		line, err := br.ReadSlice('\n')
		read += len(line)
		if read > MaxBytes {
			return nil, fmt.Errorf("parse kallsyms: more than %d bytes", MaxBytes)
		}
		if lines > MaxLines {
			return nil, fmt.Errorf("parse kallsyms: more than %d lines", MaxLines)
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		if err == bufio.ErrBufferFull || len(line) > MaxLineLen {
			return nil, fmt.Errorf("parse kallsyms: line %d: line too long (over %d bytes)", lines, MaxLineLen)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("parse kallsyms: %w", err)
		}
		if n := splitFields(line, &fields); n > 0 {
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
			switch typ := fields[1][0]; typ {
			case 't', 'T', 'w', 'W':
				var mod uint16
				if n >= 4 {
					m := fields[3]
					if len(m) < 2 || m[0] != '[' || m[len(m)-1] != ']' {
						return nil, fmt.Errorf("parse kallsyms: line %d: bad module field %.80q", lines, m)
					}
					m = m[1 : len(m)-1]
					var ok bool
					if mod, ok = modIdx[string(m)]; !ok {
						if len(modules) > 0xffff {
							return nil, fmt.Errorf("parse kallsyms: line %d: more than %d modules", lines, 0xffff)
						}
						mod = uint16(len(modules))
						modules = append(modules, string(m))
						modIdx[string(m)] = mod
					}
				}
				if len(cur) == cap(cur) {
					if cur != nil {
						ents = append(ents, cur)
					}
					cur = make([]entry, 0, entChunk)
				}
				if curName.Len()+len(fields[2]) > nameChunk || curName.Cap() == 0 {
					if curName.Cap() != 0 {
						names = append(names, curName.String())
						curName = strings.Builder{}
					}
					curName.Grow(nameChunk)
				}
				cur = append(cur, entry{addr: addr, name: uint32(len(names))<<16 | uint32(curName.Len()), nlen: uint16(len(fields[2])), mod: mod, typ: typ})
				curName.Write(fields[2])
				count++
			}
		}
		if err == io.EOF {
			break
		}
	}
	if total > 0 && !nonzero {
		return nil, ErrRestricted
	}
	if len(cur) > 0 {
		ents = append(ents, cur)
	}
	if curName.Len() > 0 {
		names = append(names, curName.String())
	}
	return newTable(&Table{ents: ents, n: count, names: names, modules: modules}), nil
}

// splitFields puts up to four whitespace-separated fields of line in f and returns how
// many it found (more than four count as four).
func splitFields(line []byte, f *[4][]byte) int {
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
func parseHex(b []byte) (uint64, bool) {
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

func compareAddr(a, b entry) int {
	switch {
	case a.addr < b.addr:
		return -1
	case a.addr > b.addr:
		return 1
	}
	return 0
}

// newTable sorts t's symbols if the text did not list them in address order and keeps one
// symbol per address.
func newTable(t *Table) *Table {
	sorted := true
	for i := 1; i < t.n && sorted; i++ {
		sorted = t.at(i-1).addr <= t.at(i).addr
	}
	if !sorted {
		flat := make([]entry, 0, t.n)
		for _, c := range t.ents {
			flat = append(flat, c...)
		}
		slices.SortStableFunc(flat, compareAddr)
		t.ents = t.ents[:0]
		for i := 0; i < len(flat); i += entChunk {
			j := min(i+entChunk, len(flat))
			t.ents = append(t.ents, flat[i:j:j])
		}
	}
	// Keep a global symbol over a local one, then the first listed.
	w := 0
	for i := 0; i < t.n; {
		best := *t.at(i)
		j := i + 1
		for ; j < t.n && t.at(j).addr == best.addr; j++ {
			if rank(t.at(j).typ) < rank(best.typ) {
				best = *t.at(j)
			}
		}
		*t.at(w) = best
		w++
		i = j
	}
	t.n = w
	t.ents = t.ents[:(w+entChunk-1)/entChunk]
	if w%entChunk != 0 {
		last := len(t.ents) - 1
		t.ents[last] = t.ents[last][:w%entChunk]
	}
	return t
}

func (t *Table) at(i int) *entry { return &t.ents[i>>entShift][i&(entChunk-1)] }

// entryAt is symbol i, from ents or raw.
func (t *Table) entryAt(i int) entry {
	if t.raw != nil {
		return decodeEntry(t.raw[i*entryBytes : (i+1)*entryBytes])
	}
	return *t.at(i)
}

// addrAt is symbol i's address.
func (t *Table) addrAt(i int) uint64 {
	if t.raw != nil {
		return binary.LittleEndian.Uint64(t.raw[i*entryBytes:])
	}
	return t.at(i).addr
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

// symbol expands entry i, with its end: the next symbol's address when that symbol is of
// the same module or starts within LastSymbolSpan, else Addr+LastSymbolSpan.
func (t *Table) symbol(i int) Symbol {
	e := t.entryAt(i)
	end := e.addr + LastSymbolSpan
	if end < e.addr {
		end = ^uint64(0)
	}
	if i+1 < t.n {
		if next := t.entryAt(i + 1); next.mod == e.mod || next.addr < end {
			end = next.addr
		}
	}
	chunk, off := e.name>>16, e.name&0xffff
	return Symbol{Addr: e.addr, Name: t.names[chunk][off : off+uint32(e.nlen)], Module: t.modules[e.mod], Type: e.typ, end: end}
}

// Len returns the number of symbols.
func (t *Table) Len() int { return t.n }

// Symbols returns the sorted symbols, in a new slice.
func (t *Table) Symbols() []Symbol {
	syms := make([]Symbol, t.n)
	for i := range syms {
		syms[i] = t.symbol(i)
	}
	return syms
}

// Lookup returns the symbol containing addr.
func (t *Table) Lookup(addr uint64) (Symbol, bool) {
	i := sort.Search(t.n, func(k int) bool { return t.addrAt(k) >= addr })
	found := i < t.n && t.addrAt(i) == addr
	// i is the first symbol with addr >= addr.
	if found {
		return t.symbol(i), true
	}
	if i == 0 {
		return Symbol{}, false
	}
	s := t.symbol(i - 1)
	if addr >= s.end {
		return Symbol{}, false
	}
	return s, true
}

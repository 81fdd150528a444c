// Package tracefmt reads a tracepoint's format file (events/SYS/NAME/format in tracefs)
// and decodes the raw data of its samples (PERF_SAMPLE_RAW) into named fields.
//
// Both work on untrusted bytes: the parser takes at most MaxFormat bytes and MaxFields
// fields, the decoder reads nothing outside the raw data it is given, and neither panics.
// The raw data is little-endian (the machines stax records on).
package tracefmt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Bounds on what Parse takes.
const (
	MaxFormat = 64 << 10 // bytes of a format file
	MaxFields = 256      // fields of one tracepoint
	maxIdent  = 128      // bytes of a field's name
	maxType   = 128      // bytes of a field's type
	maxOffset = 1 << 16  // a field's offset and size: raw data is less than 64 KiB
)

// Kind is how a field's bytes are read.
type Kind uint8

const (
	// Int is a signed or unsigned integer of 1, 2, 4 or 8 bytes.
	Int Kind = iota
	// String is text: a fixed char array, a __data_loc char[] or a trailing char[], up to
	// its first NUL.
	String
	// List is an array of integers (each of Elem bytes): a fixed array, a __data_loc one,
	// a trailing one, or a field of another size (its bytes).
	List
)

// Field is one field of a tracepoint's raw data.
type Field struct {
	Name   string
	Type   string // as declared, without the name: "pid_t", "__data_loc char[]"
	Offset int
	Size   int
	Signed bool
	Kind   Kind
	// Elem is the size of a List's elements.
	Elem int
	// Dynamic: the field holds where its data is, as __data_loc (offset in the low 16 bits,
	// length in the high 16) or __rel_loc (Rel: the offset counts from the field's end).
	Dynamic, Rel bool
	// Tail: an array without a length that runs to the end of the raw data (char buf[]).
	Tail bool
}

// Common says whether the field is one every tracepoint has (common_pid, ...).
func (f Field) Common() bool { return strings.HasPrefix(f.Name, "common_") }

// Format is a tracepoint's fields, in the order of its format file.
type Format struct {
	Name   string // the format file's name: line
	Fields []Field
}

// ErrFormat is wrapped by Parse's errors.
var ErrFormat = errors.New("tracepoint format")

// Parse reads a format file: each "field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;" line.
// Lines it does not understand are skipped; a format without fields is an error.
func Parse(b []byte) (*Format, error) {
	if len(b) > MaxFormat {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrFormat, len(b), MaxFormat)
	}
	f := &Format{}
	seen := map[string]bool{}
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "name:"); ok && f.Name == "" {
			if name = strings.TrimSpace(name); ident(name) {
				f.Name = name
			}
			continue
		}
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		fl, ok := parseField(line)
		if !ok || seen[fl.Name] {
			continue
		}
		seen[fl.Name] = true
		if f.Fields = append(f.Fields, fl); len(f.Fields) > MaxFields {
			return nil, fmt.Errorf("%w: more than %d fields", ErrFormat, MaxFields)
		}
	}
	if len(f.Fields) == 0 {
		return nil, fmt.Errorf("%w: no fields", ErrFormat)
	}
	return f, nil
}

// parseField reads one field line.
func parseField(line string) (Field, bool) {
	var f Field
	var decl string
	have := 0
	for part := range strings.SplitSeq(line, ";") {
		k, v, found := strings.Cut(strings.TrimSpace(part), ":")
		if !found {
			continue
		}
		switch k {
		case "field":
			decl = strings.TrimSpace(v)
			have |= 1
		case "offset", "size", "signed":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > maxOffset {
				return Field{}, false
			}
			switch k {
			case "offset":
				f.Offset, have = n, have|2
			case "size":
				f.Size, have = n, have|4
			default:
				f.Signed, have = n != 0, have|8
			}
		}
	}
	if have != 15 {
		return Field{}, false
	}
	i := strings.LastIndexAny(decl, " \t")
	if i <= 0 {
		return Field{}, false
	}
	typ, name := strings.TrimSpace(decl[:i]), decl[i+1:]
	count, array := -1, false // -1: no length given ([] or none)
	if j := strings.IndexByte(name, '['); j >= 0 {
		inner, ok := strings.CutSuffix(name[j+1:], "]")
		if !ok {
			return Field{}, false
		}
		array, name = true, name[:j]
		if n, err := strconv.Atoi(inner); err == nil && n > 0 && n <= maxOffset {
			count = n
		}
	}
	if !ident(name) || typ == "" || len(typ) > maxType {
		return Field{}, false
	}
	f.Name, f.Type = name, typ
	base := typ
	switch {
	case strings.HasPrefix(typ, "__data_loc "), strings.HasPrefix(typ, "__rel_loc "):
		f.Dynamic, f.Rel = true, strings.HasPrefix(typ, "__rel_loc ")
		_, base, _ = strings.Cut(typ, " ")
		base = strings.TrimSuffix(strings.TrimSpace(base), "[]")
		if f.Size != 4 {
			return Field{}, false
		}
		f.Kind, f.Elem = kindOf(base)
		return f, true
	case array && count < 0:
		f.Tail = true
		f.Kind, f.Elem = kindOf(base)
		return f, true
	case array:
		f.Kind, f.Elem = kindOf(base)
		if f.Kind == String && f.Size != count {
			f.Kind = List // a char array whose elements are not bytes
		}
		if f.Kind == List {
			f.Elem = 1
			if f.Size%count == 0 {
				f.Elem = f.Size / count
			}
		}
		return f, true
	}
	switch f.Size {
	case 1, 2, 4, 8:
		f.Kind = Int
	default:
		f.Kind, f.Elem = List, 1 // a struct or an odd size: its bytes
	}
	return f, true
}

// kindOf is how elements of type base read: char as text, others as integers of their
// size (a type stax does not know: bytes).
func kindOf(base string) (Kind, int) {
	base = strings.TrimSpace(strings.TrimPrefix(base, "const "))
	switch base {
	case "char", "signed char":
		return String, 1
	case "unsigned char", "u8", "__u8", "s8", "__s8", "uint8_t", "int8_t", "bool", "_Bool":
		return List, 1
	case "short", "unsigned short", "u16", "__u16", "s16", "__s16", "__le16", "__be16", "uint16_t", "int16_t":
		return List, 2
	case "int", "unsigned int", "unsigned", "u32", "__u32", "s32", "__s32", "__le32", "__be32", "uint32_t", "int32_t",
		"pid_t", "gfp_t", "dev_t":
		return List, 4
	case "long", "unsigned long", "long long", "unsigned long long", "u64", "__u64", "s64", "__s64", "__le64", "__be64",
		"uint64_t", "int64_t", "size_t", "ssize_t", "loff_t", "sector_t", "void *":
		return List, 8
	}
	if strings.HasSuffix(base, "*") {
		return List, 8
	}
	return List, 1
}

func ident(s string) bool {
	if s == "" || len(s) > maxIdent {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Field returns the field named name.
func (f *Format) Field(name string) (Field, bool) {
	for _, fl := range f.Fields {
		if fl.Name == name {
			return fl, true
		}
	}
	return Field{}, false
}

// Value is one field of a sample's raw data, decoded: Kind says which of Num (an Int's
// bits: sign-extend with Signed), Str and List (each element's bits) holds it.
type Value struct {
	Name   string
	Kind   Kind
	Signed bool
	Num    uint64
	Str    string
	List   []uint64
}

// Int is an Int value as a signed number (Signed) or its bits.
func (v Value) Int() int64 { return int64(v.Num) }

// Any is the value as encoding/json writes it: int64 or uint64, string, or a slice of
// int64 or uint64.
func (v Value) Any() any {
	switch v.Kind {
	case String:
		return v.Str
	case List:
		if v.Signed {
			out := make([]int64, len(v.List))
			for i, x := range v.List {
				out[i] = int64(x)
			}
			return out
		}
		out := make([]uint64, len(v.List))
		copy(out, v.List)
		return out
	}
	if v.Signed {
		return int64(v.Num)
	}
	return v.Num
}

// Decode appends the values of the fields of raw to out, leaving out the common ones
// (common_pid, ...) unless common, and any field whose bytes raw does not hold.
func (f *Format) Decode(raw []byte, common bool, out []Value) []Value {
	for _, fl := range f.Fields {
		if fl.Common() && !common {
			continue
		}
		if v, ok := fl.Decode(raw); ok {
			out = append(out, v)
		}
	}
	return out
}

// Decode reads the field from raw; false when raw does not hold it.
func (f Field) Decode(raw []byte) (Value, bool) {
	v := Value{Name: f.Name, Kind: f.Kind, Signed: f.Signed}
	data, ok := f.bytes(raw)
	if !ok {
		return Value{}, false
	}
	switch f.Kind {
	case Int:
		u, ok := number(data, len(data), f.Signed)
		if !ok {
			return Value{}, false
		}
		v.Num = u
	case String:
		for i, c := range data {
			if c == 0 {
				data = data[:i]
				break
			}
		}
		v.Str = string(data)
	default:
		elem := f.Elem
		if elem != 1 && elem != 2 && elem != 4 && elem != 8 {
			elem = 1
		}
		v.List = make([]uint64, 0, len(data)/elem)
		for i := 0; i+elem <= len(data); i += elem {
			u, _ := number(data[i:], elem, f.Signed)
			v.List = append(v.List, u)
		}
	}
	return v, true
}

// bytes is the field's data in raw: where a dynamic field points, the rest of raw for a
// trailing array, else the field's own bytes.
func (f Field) bytes(raw []byte) ([]byte, bool) {
	if f.Offset < 0 || f.Size < 0 || f.Offset > len(raw) || f.Size > len(raw)-f.Offset {
		return nil, false
	}
	own := raw[f.Offset : f.Offset+f.Size]
	switch {
	case f.Tail:
		return raw[f.Offset:], true
	case !f.Dynamic:
		return own, true
	}
	loc, ok := number(own, 4, false)
	if !ok {
		return nil, false
	}
	off, n := int(loc&0xffff), int(loc>>16)
	if f.Rel {
		off += f.Offset + f.Size
	}
	if off > len(raw) || n > len(raw)-off {
		return nil, false
	}
	return raw[off : off+n], true
}

// number reads a little-endian integer of size bytes from b, sign-extended if signed.
func number(b []byte, size int, signed bool) (uint64, bool) {
	switch size {
	case 1, 2, 4, 8:
	default:
		return 0, false
	}
	if len(b) < size {
		return 0, false
	}
	var u uint64
	for i := size - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	if signed && size < 8 && u&(1<<(size*8-1)) != 0 {
		u |= ^uint64(0) << (size * 8)
	}
	return u, true
}

// FormatValue writes a value as a perf script line shows it: name=value, a number in
// decimal, a list as [a,b,c]; text is left as it is (the caller escapes it for a terminal).
func FormatValue(v Value) string {
	switch v.Kind {
	case String:
		return v.Str
	case List:
		var b strings.Builder
		b.WriteByte('[')
		for i, x := range v.List {
			if i > 0 {
				b.WriteByte(',')
			}
			if v.Signed {
				b.WriteString(strconv.FormatInt(int64(x), 10))
			} else {
				b.WriteString(strconv.FormatUint(x, 10))
			}
		}
		b.WriteByte(']')
		return b.String()
	}
	if v.Signed {
		return strconv.FormatInt(int64(v.Num), 10)
	}
	return strconv.FormatUint(v.Num, 10)
}

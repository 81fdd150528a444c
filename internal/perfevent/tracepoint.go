package perfevent

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// TraceField is where a field of a tracepoint's raw data lies (PERF_SAMPLE_RAW).
type TraceField struct {
	Offset, Size int
	Signed       bool
}

// Value reads the field from raw, false when raw is too short or the field is not an
// integer of 1, 2, 4 or 8 bytes.
func (f TraceField) Value(raw []byte) (int64, bool) {
	if f.Offset < 0 || f.Size <= 0 || f.Offset+f.Size > len(raw) {
		return 0, false
	}
	b := raw[f.Offset : f.Offset+f.Size]
	var u uint64
	switch f.Size {
	case 1, 2, 4, 8:
		for i := f.Size - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
	default:
		return 0, false
	}
	if f.Signed && f.Size < 8 && u&(1<<(f.Size*8-1)) != 0 {
		u |= ^uint64(0) << (f.Size * 8)
	}
	return int64(u), true
}

// maxFormat bounds a tracepoint format file.
const maxFormat = 64 << 10

// ParseTraceFormat reads the fields of a tracepoint's format file (events/<sys>/<name>/format
// in tracefs): each "field:<type> <name>;\toffset:N;\tsize:N;\tsigned:N;" line.
func ParseTraceFormat(b []byte) (map[string]TraceField, error) {
	if len(b) > maxFormat {
		return nil, fmt.Errorf("parse tracepoint format: %d bytes, more than %d", len(b), maxFormat)
	}
	fields := map[string]TraceField{}
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var name string
		var f TraceField
		ok := 0
		for part := range strings.SplitSeq(line, ";") {
			k, v, found := strings.Cut(strings.TrimSpace(part), ":")
			if !found {
				continue
			}
			switch k {
			case "field":
				decl := strings.Fields(v)
				if len(decl) == 0 {
					continue
				}
				name = decl[len(decl)-1]
				if i := strings.IndexByte(name, '['); i >= 0 {
					name = name[:i]
				}
				ok++
			case "offset", "size", "signed":
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 || n > maxFormat {
					continue
				}
				switch k {
				case "offset":
					f.Offset = n
				case "size":
					f.Size = n
				default:
					f.Signed = n != 0
				}
				ok++
			}
		}
		if ok == 4 && name != "" {
			fields[name] = f
		}
	}
	if len(fields) == 0 {
		return nil, errors.New("parse tracepoint format: no fields")
	}
	return fields, nil
}

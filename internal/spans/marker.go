package spans

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxMarkerLine is the most bytes of one marker file line looked at: a longer line's
// name is cut (to MaxName) and the rest of the line skipped.
const MaxMarkerLine = MaxName + 64

// Marker is one line of a marker file: "START END NAME", START and END in decimal
// CLOCK_MONOTONIC nanoseconds, NAME the rest of the line (as samply reads them).
type Marker struct {
	Start, End uint64
	Name       string
}

// ParseMarkerLine decodes one marker file line, without its newline.
func ParseMarkerLine(line []byte) (Marker, bool) {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	start, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return Marker{}, false
	}
	end, name, ok := bytes.Cut(rest, []byte{' '})
	if !ok || len(name) == 0 {
		return Marker{}, false
	}
	s, ok1 := decimal(start)
	e, ok2 := decimal(end)
	if !ok1 || !ok2 || e < s {
		return Marker{}, false
	}
	if len(name) > MaxName {
		return Marker{Start: s, End: e, Name: CutName(string(name[:min(len(name), MaxName+4)]))}, true
	}
	return Marker{Start: s, End: e, Name: string(name)}, true
}

func decimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	return v, err == nil
}

// ParseMarkers decodes the whole lines at the start of b, appending the markers to out.
// It returns the markers, the bytes consumed (through the last newline) and the number of
// lines that are not markers (blank lines are not counted). A last line without a newline
// is left unless it is already longer than MaxMarkerLine: then it is read (its name cut)
// and consumed, and long says so: the caller skips the rest of that line.
func ParseMarkers(b []byte, out []Marker) (markers []Marker, consumed, bad int, long bool) {
	markers = out
	for consumed < len(b) {
		rest := b[consumed:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(rest) <= MaxMarkerLine {
				return markers, consumed, bad, false
			}
			i, long = len(rest), true
		}
		line := rest[:i]
		consumed += min(i+1, len(rest))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if m, ok := ParseMarkerLine(line[:min(len(line), MaxMarkerLine+4)]); ok {
			markers = append(markers, m)
		} else {
			bad++
		}
	}
	return markers, consumed, bad, long
}

// IsMarkerName reports whether path names a marker file, marker-PID.txt or
// marker-PID-TID.txt, and returns its pid and thread (0 when not named).
func IsMarkerName(path string) (pid, tid int, ok bool) {
	base := filepath.Base(path)
	rest, found := strings.CutPrefix(base, "marker-")
	if !found {
		return 0, 0, false
	}
	rest, found = strings.CutSuffix(rest, ".txt")
	if !found {
		return 0, 0, false
	}
	p, t, hasTid := strings.Cut(rest, "-")
	if pid, ok = number(p); !ok {
		return 0, 0, false
	}
	if hasTid {
		if tid, ok = number(t); !ok {
			return 0, 0, false
		}
	}
	return pid, tid, true
}

func number(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<31-1 {
		return 0, false
	}
	return n, true
}

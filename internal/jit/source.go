package jit

import (
	"maps"
	"path/filepath"
	"strconv"
	"strings"
)

// Skip reasons counted by the tailers.
const (
	SkipUnknownID  = "unknown record id"
	SkipBadLine    = "bad perf map line"
	SkipTooMany    = "too many entries"
	SkipUnwindSize = "unwinding data truncated"
	SkipOverBudget = "over the JIT memory budget"
	// SkipNotWritten counts the functions stax's collector could not write to the file (a
	// write failed, and it gave the file up): its header says how many.
	SkipNotWritten = "not written by the collector"
)

// Source is the status of one JIT announcement file, for display.
type Source struct {
	Path      string
	Kind      SourceKind
	Functions uint64            // functions announced (loads or map lines)
	Records   uint64            // records or lines read
	Skipped   map[string]uint64 // records or lines skipped, by reason
	Resets    uint64            // times the file was truncated or replaced
	Closed    bool              // a CODE_CLOSE was seen
	LastError string
	// NotWritten counts the functions the writer could not write (stax's collector says
	// so in its header extension), WriteError why (its last failed write).
	NotWritten uint64
	WriteError string
}

func (s *Source) skip(reason string) {
	if s.Skipped == nil {
		s.Skipped = make(map[string]uint64)
	}
	s.Skipped[reason]++
}

// clone returns a copy that shares nothing with s.
func (s *Source) clone() Source {
	c := *s
	c.Skipped = maps.Clone(s.Skipped)
	return c
}

// IsJitdumpName reports whether path names a jitdump file as perf's
// convention spells it, jit-<pid>.dump, and returns the pid.
func IsJitdumpName(path string) (pid int, ok bool) {
	base := filepath.Base(path)
	digits, found := strings.CutPrefix(base, "jit-")
	if !found {
		return 0, false
	}
	digits, found = strings.CutSuffix(digits, ".dump")
	if !found || digits == "" || len(digits) > 10 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n <= 0 || n > 1<<31-1 {
		return 0, false
	}
	return n, true
}

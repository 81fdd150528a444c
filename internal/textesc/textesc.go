// Package textesc makes names safe to print to a terminal. Function, thread, file and JIT
// names come from the profiled programs (symbol tables, jitdump and perf map files, thread
// names), so a hostile one could carry control sequences that rewrite the user's terminal
// (retitle it, move the cursor, hide lines), or bidirectional controls that make the
// text after them read in another order than it runs. Text output writes every such name through
// [Escape]; JSON output needs nothing, as JSON escapes control characters itself.
package textesc

import (
	"strings"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// Escape returns s with what a terminal would act on rather than show written as escapes:
// C0 control characters (newline and tab included) and DEL as \xHH, C1 control characters
// (U+0080 to U+009F) as \u00HH, the bidirectional embedding, override and isolate controls
// (U+202A to U+202E, U+2066 to U+2069) as \uHHHH, and each byte that is not part of valid
// UTF-8 as \xHH.
// Printable text in any script passes unchanged, and s itself is returned when nothing
// needs escaping. A backslash is left as it is.
func Escape(s string) string {
	i := 0
	for i < len(s) {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !unsafe(r, n):
			b.WriteString(s[i : i+n])
		case r >= 0x80 && r != utf8.RuneError: // C1 or a bidi control, valid UTF-8
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hexDigits[(r>>shift)&0xf])
			}
		default: // C0, DEL, or a byte that is not UTF-8
			c := s[i]
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
			n = 1
		}
		i += n
	}
	return b.String()
}

// unsafe reports whether the rune r, decoded from n bytes, must be escaped.
func unsafe(r rune, n int) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || Bidi(r) || (r == utf8.RuneError && n == 1)
}

// Bidi reports whether r is a bidirectional embedding, override or isolate control
// (U+202A to U+202E, U+2066 to U+2069): shown as they are, they reorder what follows.
func Bidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

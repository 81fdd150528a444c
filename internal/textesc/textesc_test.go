package textesc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"main", "main"},
		{"std::vector<int>::push_back(int const&)", "std::vector<int>::push_back(int const&)"},
		{"héllo wörld 関数 λ €", "héllo wörld 関数 λ €"},
		{"\x1b]0;pwned\x07evil", `\x1b]0;pwned\x07evil`},
		{"a\nb\tc\rd\x00e", `a\x0ab\x09c\x0dd\x00e`},
		{"del\x7f", `del\x7f`},
		{"c1\u0085\u009b31m", `c1\u0085\u009b31m`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"cut\xe2\x82", `cut\xe2\x82`}, // a truncated euro sign
		{"\xc2\x9b", `\u009b`},         // C1 CSI encoded as UTF-8
		{"\xc2", `\xc2`},
		{"ok\uFFFDreplacement", "ok\uFFFDreplacement"}, // U+FFFD itself is printable
		{`back\slash`, `back\slash`},
		{"\u00a0nbsp", "\u00a0nbsp"},
		{"file\u202etxt.exe", `file\u202etxt.exe`}, // RIGHT-TO-LEFT OVERRIDE
		{"\u202a\u202b\u202c\u202d x", `\u202a\u202b\u202c\u202d x`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"\u2029\u206a\u2065 ok", "\u2029\u206a\u2065 ok"}, // beside the ranges: left as they are
		{"שלום עולם", "שלום עולם"},                         // right-to-left text itself is printable
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestEscapeLeavesNoControls checks over every byte pair and some runes that the result
// is valid UTF-8 free of control characters.
func TestEscapeLeavesNoControls(t *testing.T) {
	var ins []string
	for a := 0; a < 256; a++ {
		for b := 0; b < 256; b += 17 {
			ins = append(ins, string([]byte{byte(a), byte(b), 'x'}))
		}
	}
	for _, in := range ins {
		out := Escape(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q is not UTF-8", in, out)
		}
		for _, r := range out {
			if unsafe(r, utf8.RuneLen(r)) {
				t.Fatalf("Escape(%q) = %q keeps %U", in, out, r)
			}
		}
	}
}

func TestEscapeCleanIsFree(t *testing.T) {
	s := strings.Repeat("clean_name ", 10)
	if n := testing.AllocsPerRun(100, func() { Escape(s) }); n != 0 {
		t.Errorf("escaping a clean name allocates %v times", n)
	}
}

package push

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzHeaderLines: whatever a headers file (--push-header @FILE, $STAX_PUSH_HEADERS)
// holds, it is read without a panic, and what it yields can be sent: names are tokens,
// values hold no line break, and an error is one line.
func FuzzHeaderLines(f *testing.F) {
	f.Add("Authorization: Bearer abc\n")
	f.Add("# comment\n\nX-Scope-OrgID: team\r\nX-A:b")
	f.Add("no colon here\n")
	f.Add("Bad Name: v\n")
	f.Add("X-A: a\x00b\n")
	f.Fuzz(func(t *testing.T, text string) {
		h := http.Header{}
		err := ParseHeaderLines(h, text, "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		for k, vs := range h {
			if !validName(k) {
				t.Fatalf("name %q", k)
			}
			for _, v := range vs {
				if strings.ContainsAny(v, "\r\n\x00") {
					t.Fatalf("value %q", v)
				}
			}
		}
	})
}

package web

import (
	"regexp"
	"testing"
)

// TestScriptsDeclareEachNameOnce: the page's scripts share one global scope, so a name that
// two of them declare at top level (a const, let, class or function) stops the second
// script whole, and the page draws nothing. Browser tests see that too, but only slowly and
// not under -short.
func TestScriptsDeclareEachNameOnce(t *testing.T) {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	scripts := regexp.MustCompile(`<script src="([^"?]+)`).FindAllStringSubmatch(string(page), -1)
	if len(scripts) == 0 {
		t.Fatal("index.html loads no script")
	}
	decl := regexp.MustCompile(`(?m)^(?:const|let|var|class|(?:async\s+)?function\*?)\s+([A-Za-z_$][\w$]*)`)
	where := map[string]string{}
	for _, s := range scripts {
		name := s[1]
		src, err := assets.ReadFile("assets/" + name)
		if err != nil {
			t.Fatalf("index.html loads %s: %v", name, err)
		}
		for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
			id := m[1]
			if first, ok := where[id]; ok {
				t.Errorf("%s declares %s at top level, which %s declared first: the browser refuses %s whole", name, id, first, name)
				continue
			}
			where[id] = name
		}
	}
	if _, ok := where["PRUNE_PCT"]; len(where) < 10 || !ok {
		t.Fatalf("found only %d top-level names: the pattern no longer reads the scripts", len(where))
	}
}

package web

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
)

// TestPageParamsTable: the page builds every query string of the socket API from its one
// table, PARAMS, whose names are parameters of the API's requests: app.js makes no query
// string of its own from an object of parameters.
func TestPageParamsTable(t *testing.T) {
	b, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	_, table, ok := strings.Cut(src, "\nconst PARAMS = {\n")
	if !ok {
		t.Fatal("app.js has no PARAMS table")
	}
	table, _, _ = strings.Cut(table, "\n};\n")
	known := map[string]bool{}
	for _, r := range api.Requests() {
		for _, name := range api.ParamNames(r) {
			known[name] = true
		}
	}
	names := regexp.MustCompile(`(?m)^  ([a-z_]+):`).FindAllStringSubmatch(table, -1)
	if len(names) == 0 {
		t.Fatal("no parameter in app.js's PARAMS table")
	}
	for _, m := range names {
		if !known[m[1]] {
			t.Errorf("PARAMS sets %q, a parameter of no request", m[1])
		}
	}
	if m := regexp.MustCompile(`new URLSearchParams\(\{[^\n]*`).FindAllString(src, -1); m != nil {
		t.Errorf("app.js builds query strings outside PARAMS: %q", m)
	}
}

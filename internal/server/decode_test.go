package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/api"
)

// TestHandlersDecodeThroughAPI: no handler of the server reads a request's parameters
// itself (r.URL.Query(), r.FormValue, r.Form, ...): decode alone does, through the
// request types of api, so that a parameter has one name and one parser for the CLI, the
// web page and the server.
func TestHandlersDecodeThroughAPI(t *testing.T) {
	readers := map[string]bool{"Query": true, "RawQuery": true, "FormValue": true, "PostFormValue": true,
		"Form": true, "PostForm": true, "ParseForm": true, "ParseMultipartForm": true, "MultipartForm": true}
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name == "decode" && fd.Recv == nil {
				continue
			}
			ast.Inspect(fd, func(n ast.Node) bool {
				if s, ok := n.(*ast.SelectorExpr); ok && readers[s.Sel.Name] {
					t.Errorf("%s: %s reads the request's parameters itself (.%s): decode them into an api request", fset.Position(s.Pos()), fd.Name.Name, s.Sel.Name)
				}
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("no source file of the server found")
	}
}

// TestCommandsRoundTrip: each of the live run's commands reads back what it encodes, every
// parameter set.
func TestCommandsRoundTrip(t *testing.T) {
	for _, want := range []api.Request{&api.MarkRequest{Name: "cache warmed", At: 42}, &api.StopRequest{}, &api.RunFileRequest{Bake: true}} {
		got := reflect.New(reflect.TypeOf(want).Elem()).Interface().(api.Request)
		if err := got.Decode(want.Encode()); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v read back as %+v (%v), want %+v", want.Path(), want.Encode(), got, err, want)
		}
		if n := len(api.ParamNames(want)); n != reflect.TypeOf(want).Elem().NumField() {
			t.Errorf("%s: %d parameters for %d fields", want.Path(), n, reflect.TypeOf(want).Elem().NumField())
		}
	}
	var m api.MarkRequest
	if err := m.Decode(url.Values{"at": {"x"}}); err == nil || !strings.Contains(err.Error(), "parameter name: empty") || !strings.Contains(err.Error(), `parameter at: "x" is not a time in nanoseconds`) {
		t.Errorf("a mark without a name, at x: %v", err)
	}
}

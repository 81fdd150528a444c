package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// documents are a value of each JSON document's type, the roots of the wire types
// TestWireTypesAreAPIs walks.
var documents = []any{
	Status{}, Top{}, Flame{}, Callers{}, Threads{}, Timeline{}, ThreadStates{}, Wakers{}, Spans{}, Samples{}, Compare{},
	List{}, Wait{}, Mark{}, Stopped{}, Error{}, StackChart{}, Annotate{},
}

// TestWireTypesAreAPIs: the types of every document, walked field by field, are api's own
// or the standard library's, never one of the model's (internal/agg, internal/store,
// internal/spans, ...) embedded, aliased or held: the JSON cannot change when the model
// does. A struct type api declares that no document reaches must be listed in documents.
// notWire are api's struct types that are no part of a document: the requests (query
// parameters, see params.go) and the recorder's wait condition.
var notWire = map[string]bool{"WaitCondition": true, "View": true, "Processes": true, "WindowParams": true, "TimeMode": true}

func TestWireTypesAreAPIs(t *testing.T) {
	api := reflect.TypeOf(Status{}).PkgPath()
	reached := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(ty reflect.Type, path string)
	walk = func(ty reflect.Type, path string) {
		if seen[ty] {
			return
		}
		seen[ty] = true
		if ty.Name() != "" && ty.PkgPath() != "" {
			if ty.PkgPath() == api {
				reached[ty.Name()] = true
			} else if strings.Contains(ty.PkgPath(), "/internal/") || strings.Contains(ty.PkgPath(), "/pkg/") {
				t.Errorf("%s is %s, a type of %s: give it a wire type of its own in api", path, ty, ty.PkgPath())
				return
			}
		}
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(ty.Elem(), path+"[]")
		case reflect.Map:
			walk(ty.Key(), path+"{key}")
			walk(ty.Elem(), path+"{}")
		case reflect.Struct:
			for i := range ty.NumField() {
				f := ty.Field(i)
				walk(f.Type, path+"."+f.Name)
			}
		case reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer:
			t.Errorf("%s is %s: a document holds data", path, ty)
		}
	}
	for _, d := range documents {
		walk(reflect.TypeOf(d), reflect.TypeOf(d).Name())
	}
	// Every struct type api declares is reached, so none escapes the walk.
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	var missing []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				if ts.Assign.IsValid() {
					t.Errorf("%s: type %s is an alias: give it a type of its own", fset.Position(ts.Pos()), ts.Name.Name)
				}
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && !reached[ts.Name.Name] && !strings.HasSuffix(ts.Name.Name, "Request") {
					missing = append(missing, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		if !notWire[m] {
			t.Errorf("no document reaches api.%s: add it (or the document holding it) to documents", m)
		}
	}
}

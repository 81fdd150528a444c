package api_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/query"
)

// filledAnswer is an annotate answer with every field set, nested ones too, down to the
// elements of its slices: a field of the model that the document leaves out shows in its
// JSON.
func filledAnswer(t *testing.T) *query.AnnotateResult {
	var res query.AnnotateResult
	api.Fill(reflect.ValueOf(&res).Elem(), 8)
	var unset func(v reflect.Value, path string)
	unset = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Pointer:
			unset(v.Elem(), path)
		case reflect.Slice:
			for i := range v.Len() {
				unset(v.Index(i), path+"[]")
			}
		case reflect.Struct:
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() {
					if v.Field(i).IsZero() {
						t.Fatalf("%s.%s is not set", path, f.Name)
					}
					unset(v.Field(i), path+"."+f.Name)
				}
			}
		}
	}
	unset(reflect.ValueOf(res), "AnnotateResult")
	return &res
}

// TestAnnotateDocSameJSON: the annotate document converted from query's answer
// (query.AnnotateDoc) writes the JSON the answer did, every field set and nil and empty
// kept apart, as TestConvertSameJSON checks the other documents' parts.
func TestAnnotateDocSameJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		res  *query.AnnotateResult
	}{
		{"filled", filledAnswer(t)},
		{"zero", &query.AnnotateResult{}},
		{"empty", &query.AnnotateResult{Annotation: &annotate.Annotation{Insts: []annotate.AnnotatedInst{}}, Others: []query.Match{},
			Versions: []query.CodeVersion{}, Notes: []string{}}},
	} {
		m, err := json.Marshal(c.res)
		if err != nil {
			t.Fatal(err)
		}
		w, err := json.Marshal(query.AnnotateDoc(c.res))
		if err != nil {
			t.Fatal(err)
		}
		if string(m) != string(w) {
			t.Errorf("%s: the document writes\n%s\nits model\n%s", c.name, w, m)
		}
	}
}

// TestAnnotationOfDoc: a document's annotation taken back to the model (for its text, on
// the web page) is the annotation the document was made of, every field.
func TestAnnotationOfDoc(t *testing.T) {
	for _, a := range []*annotate.Annotation{filledAnswer(t).Annotation, {Insts: []annotate.AnnotatedInst{}}, {}, nil} {
		doc := query.AnnotateDoc(&query.AnnotateResult{Annotation: a})
		if back := query.AnnotationOfDoc(doc.Annotation); !reflect.DeepEqual(back, a) {
			t.Errorf("annotation %#v\ncomes back as %#v", a, back)
		}
	}
}

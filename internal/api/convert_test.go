package api

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/spans"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/views"
)

// fill sets every field of v, recursively, to a value that is not zero (slices and maps
// with one element, pointers to filled values), depth levels deep.
func fill(v reflect.Value, depth int) {
	if depth == 0 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s" + v.Type().Name())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(depth) + 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(depth) + 20)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(depth) + 0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth-1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth-1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth-1)
		fill(e, depth-1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 29, 12, 0, 0, 5, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth)
			}
		}
	}
}

func filled[T any]() T {
	var v T
	fill(reflect.ValueOf(&v).Elem(), 4)
	return v
}

// TestConvertSameJSON: each part of a document converted from the model writes the JSON
// the model did, every field set (nested ones too) and nil and empty kept apart, so that
// no conversion leaves a field out and the documented JSON is the same.
func TestConvertSameJSON(t *testing.T) {
	root := filled[views.FlameNode]()
	damage := filled[store.SamplesDamage]()
	for _, c := range []struct {
		name        string
		model, wire any
	}{
		{"TopRows", filled[[]views.TopRow](), TopRows(filled[[]views.TopRow]())},
		{"TopRows(nil)", []views.TopRow{}, TopRows(nil)},
		{"ProcessRows", filled[[]views.ProcessRow](), ProcessRows(filled[[]views.ProcessRow]())},
		{"ProcessRows(nil)", []views.ProcessRow(nil), ProcessRows(nil)},
		{"FlameRoot", &root, FlameRoot(&root)},
		{"FlameRoot(nil)", (*views.FlameNode)(nil), FlameRoot(nil)},
		{"CallFunctions", filled[[]views.CallFunction](), CallFunctions(filled[[]views.CallFunction]())},
		{"CallFunctions(empty)", []views.CallFunction{}, CallFunctions([]views.CallFunction{})},
		{"CallFunctions(nil)", []views.CallFunction(nil), CallFunctions(nil)},
		{"ThreadRows", filled[[]views.ThreadRow](), ThreadRows(filled[[]views.ThreadRow]())},
		{"TimelineOf", filled[views.Timeline](), TimelineOf(filled[views.Timeline]())},
		{"ThreadStatesRows", filled[[]views.ThreadStates](), ThreadStatesRows(filled[[]views.ThreadStates]())},
		{"WakerRows", filled[[]views.WakerRow](), WakerRows(filled[[]views.WakerRow]())},
		{"CompareRows", filled[[]views.CompareRow](), CompareRows(filled[[]views.CompareRow]())},
		{"SpanStats", filled[[]spans.Stat](), SpanStats(filled[[]spans.Stat]())},
		{"SpanSources", filled[[]spans.Source](), SpanSources(filled[[]spans.Source]())},
		{"RunMetaOf", filled[store.Meta](), RunMetaOf(filled[store.Meta]())},
		{"JITSources", filled[[]store.JITSource](), JITSources(filled[[]store.JITSource]())},
		{"SamplesDamageOf", &damage, SamplesDamageOf(&damage)},
		{"ImageSamplesOf", filled[[]agg.ImageSamples](), ImageSamplesOf(filled[[]agg.ImageSamples]())},
	} {
		m, err := json.Marshal(c.model)
		if err != nil {
			t.Fatal(err)
		}
		w, err := json.Marshal(c.wire)
		if err != nil {
			t.Fatal(err)
		}
		if string(m) != string(w) {
			t.Errorf("%s writes\n%s\nits model\n%s", c.name, w, m)
		}
	}
	if got, want := SamplesDamageOf(&damage).String(), damage.String(); got != want {
		t.Errorf("SamplesDamage says %q, the model %q", got, want)
	}
}

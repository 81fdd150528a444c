package query

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

// fillAll sets every field of the struct v to a value that is not zero.
func fillAll(t *testing.T, v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + v.Type().Field(i).Name)
		case reflect.Int:
			f.SetInt(int64(10 + i))
		case reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(20 + i))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		case reflect.Bool:
			f.SetBool(true)
		default:
			t.Fatalf("%s.%s: fill a %s", v.Type(), v.Type().Field(i).Name, f.Kind())
		}
	}
}

// TestWireRowsSameJSON: top's rows in api's wire types write the JSON agg's model did,
// every field set, so the conversion leaves none out and the documented JSON is the same.
func TestWireRowsSameJSON(t *testing.T) {
	var top agg.TopRow
	var proc agg.ProcessRow
	fillAll(t, reflect.ValueOf(&top).Elem())
	fillAll(t, reflect.ValueOf(&proc).Elem())
	for _, c := range []struct{ model, wire any }{
		{top, topRows([]agg.TopRow{top})[0]},
		{proc, processRows([]agg.ProcessRow{proc})[0]},
		{[]agg.TopRow{}, topRows(nil)},
	} {
		m, _ := json.Marshal(c.model)
		w, _ := json.Marshal(c.wire)
		if string(m) != string(w) {
			t.Errorf("%T writes\n%s\nits model\n%s", c.wire, w, m)
		}
	}
}

package jitformat

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// filled returns a T whose every byte differs, so that a misplaced field shows.
func filled[T Layout]() T {
	var v T
	rv := reflect.ValueOf(&v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		var x uint64
		for j := range f.Type().Size() {
			x |= uint64(i*16+int(j)+1) << (8 * j)
		}
		f.SetUint(x)
	}
	return v
}

// Each layout encodes as encoding/binary lays out its fields, one after the other with no
// padding, in the host's order, and decodes from either order.
func roundTrip[T Layout](t *testing.T) {
	v := filled[T]()
	name := reflect.TypeFor[T]().Name()
	var native bytes.Buffer
	binary.Write(&native, binary.NativeEndian, &v)
	if got := Append([]byte("x"), &v); !bytes.Equal(got[1:], native.Bytes()) {
		t.Errorf("%s: Append %x, encoding/binary %x", name, got[1:], native.Bytes())
	}
	put := make([]byte, native.Len()+1)
	Put(put, &v)
	if !bytes.Equal(put[:native.Len()], native.Bytes()) || put[native.Len()] != 0 {
		t.Errorf("%s: Put %x", name, put)
	}
	for _, o := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		var enc bytes.Buffer
		binary.Write(&enc, o, &v)
		var got T
		rest, ok := Decode(o, append(enc.Bytes(), 7), &got)
		if !ok || got != v || !bytes.Equal(rest, []byte{7}) {
			t.Errorf("%s %v: decoded %+v, rest %x, ok %v; want %+v", name, o, got, rest, ok, v)
		}
		var short T
		if _, ok := Decode(o, enc.Bytes()[:enc.Len()-1], &short); ok || short != *new(T) {
			t.Errorf("%s %v: a short input decoded: %+v", name, o, short)
		}
	}
}

func TestLayouts(t *testing.T) {
	roundTrip[Header](t)
	roundTrip[StaxLost](t)
	roundTrip[RecordPrefix](t)
	roundTrip[CodeLoad](t)
	roundTrip[CodeMove](t)
	roundTrip[DebugInfo](t)
	roundTrip[DebugEntry](t)
	roundTrip[UnwindingInfo](t)
	roundTrip[StaxMethodID](t)
	roundTrip[StaxInline](t)
	roundTrip[StaxCodeUnload](t)
}

func TestHeaderMagic(t *testing.T) {
	if string(binary.BigEndian.AppendUint32(nil, Magic)) != "JiTD" {
		t.Errorf("magic %#x is not JiTD", Magic)
	}
}

package tracefmt

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func readFormat(t testing.TB, name string) *Format {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "formats", name+".format"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

func TestParseRealFormats(t *testing.T) {
	sw := readFormat(t, "sched_switch")
	if sw.Name != "sched_switch" || len(sw.Fields) != 11 {
		t.Fatalf("sched_switch: %q, %d fields", sw.Name, len(sw.Fields))
	}
	want := map[string]Field{
		"common_pid": {Name: "common_pid", Type: "int", Offset: 4, Size: 4, Signed: true, Kind: Int},
		"prev_comm":  {Name: "prev_comm", Type: "char", Offset: 8, Size: 16, Kind: String, Elem: 1},
		"prev_state": {Name: "prev_state", Type: "long", Offset: 32, Size: 8, Signed: true, Kind: Int},
		"next_pid":   {Name: "next_pid", Type: "pid_t", Offset: 56, Size: 4, Signed: true, Kind: Int},
	}
	for name, w := range want {
		if got, ok := sw.Field(name); !ok || got != w {
			t.Errorf("sched_switch %s: %+v, want %+v", name, got, w)
		}
	}
	wr := readFormat(t, "sys_enter_write")
	if got, _ := wr.Field("count"); got != (Field{Name: "count", Type: "size_t", Offset: 32, Size: 8, Kind: Int}) {
		t.Errorf("sys_enter_write count: %+v", got)
	}
	if got, _ := wr.Field("buf"); got.Type != "const char *" || got.Kind != Int || got.Size != 8 {
		t.Errorf("sys_enter_write buf: %+v", got)
	}
	rq := readFormat(t, "block_rq_issue")
	if got, _ := rq.Field("cmd"); got != (Field{Name: "cmd", Type: "__data_loc char[]", Offset: 60, Size: 4, Kind: String, Elem: 1, Dynamic: true}) {
		t.Errorf("block_rq_issue cmd: %+v", got)
	}
	if got, _ := rq.Field("rwbs"); got.Kind != String || got.Size != 10 {
		t.Errorf("block_rq_issue rwbs: %+v", got)
	}
	ex := readFormat(t, "sched_prepare_exec")
	if got, _ := ex.Field("filename"); !got.Dynamic || got.Kind != String {
		t.Errorf("sched_prepare_exec filename: %+v", got)
	}
}

func TestParseKinds(t *testing.T) {
	f, err := Parse([]byte("name: x\nformat:\n" +
		"\tfield:unsigned long args[6];\toffset:8;\tsize:48;\tsigned:0;\n" +
		"\tfield:u8 addr[4];\toffset:56;\tsize:4;\tsigned:0;\n" +
		"\tfield:__data_loc u64[] addrs;\toffset:60;\tsize:4;\tsigned:0;\n" +
		"\tfield:__rel_loc char[] name;\toffset:64;\tsize:4;\tsigned:0;\n" +
		"\tfield:struct foo blob;\toffset:68;\tsize:3;\tsigned:0;\n" +
		"\tfield:char buf[];\toffset:71;\tsize:0;\tsigned:0;\n" +
		"\tfield:int broken\toffset:1;\n" +
		"\tfield:int addr;\toffset:1;\tsize:4;\tsigned:1;\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{
		{Name: "args", Type: "unsigned long", Offset: 8, Size: 48, Kind: List, Elem: 8},
		{Name: "addr", Type: "u8", Offset: 56, Size: 4, Kind: List, Elem: 1},
		{Name: "addrs", Type: "__data_loc u64[]", Offset: 60, Size: 4, Kind: List, Elem: 8, Dynamic: true},
		{Name: "name", Type: "__rel_loc char[]", Offset: 64, Size: 4, Kind: String, Elem: 1, Dynamic: true, Rel: true},
		{Name: "blob", Type: "struct foo", Offset: 68, Size: 3, Kind: List, Elem: 1},
		{Name: "buf", Type: "char", Offset: 71, Size: 0, Kind: String, Elem: 1, Tail: true},
	}
	if !reflect.DeepEqual(f.Fields, want) {
		t.Errorf("fields:\n%+v\nwant\n%+v", f.Fields, want)
	}
	for _, bad := range []string{"", "name: x\nformat:\n", "field:int a;\toffset:0;\tsize:4;", "field:int a-b;\toffset:0;\tsize:4;\tsigned:0;",
		"field:__data_loc char[] s;\toffset:0;\tsize:8;\tsigned:0;", "field:int a;\toffset:99999999;\tsize:4;\tsigned:0;"} {
		if f, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q parsed: %+v", bad, f)
		}
	}
}

func TestDecodeCrafted(t *testing.T) {
	f, err := Parse([]byte("name: x\nformat:\n" +
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n" +
		"\tfield:int a;\toffset:4;\tsize:4;\tsigned:1;\n" +
		"\tfield:unsigned char b;\toffset:8;\tsize:1;\tsigned:0;\n" +
		"\tfield:short c;\toffset:10;\tsize:2;\tsigned:1;\n" +
		"\tfield:u64 d;\toffset:16;\tsize:8;\tsigned:0;\n" +
		"\tfield:char comm[8];\toffset:24;\tsize:8;\tsigned:0;\n" +
		"\tfield:__data_loc char[] path;\toffset:32;\tsize:4;\tsigned:0;\n" +
		"\tfield:int vals[2];\toffset:36;\tsize:8;\tsigned:1;\n" +
		"\tfield:__rel_loc char[] rel;\toffset:44;\tsize:4;\tsigned:0;\n"))
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 64)
	binary.LittleEndian.PutUint32(raw[4:], uint32(0xfffffffe)) // -2
	raw[8] = 200
	binary.LittleEndian.PutUint16(raw[10:], 0x8000) // -32768
	binary.LittleEndian.PutUint64(raw[16:], 1<<63+5)
	copy(raw[24:], "abc\x00zz")
	copy(raw[48:], "/tmp\x00")
	binary.LittleEndian.PutUint32(raw[32:], 5<<16|48)
	binary.LittleEndian.PutUint32(raw[36:], 7)
	binary.LittleEndian.PutUint32(raw[40:], uint32(0xffffffff))
	copy(raw[56:], "rel")
	binary.LittleEndian.PutUint32(raw[44:], 3<<16|8) // from 48: 56
	got := f.Decode(raw, false, nil)
	want := map[string]string{"a": "-2", "b": "200", "c": "-32768", "d": "9223372036854775813", "comm": "abc", "path": "/tmp", "vals": "[7,-1]", "rel": "rel"}
	if len(got) != len(want) {
		t.Fatalf("decoded %d fields: %+v", len(got), got)
	}
	for _, v := range got {
		if s := FormatValue(v); s != want[v.Name] {
			t.Errorf("%s = %s, want %s", v.Name, s, want[v.Name])
		}
	}
	if v := got[0].Any(); v != int64(-2) {
		t.Errorf("a as JSON: %#v", v)
	}
	if v := got[3].Any(); v != uint64(1<<63+5) {
		t.Errorf("d as JSON: %#v", v)
	}
	if all := f.Decode(raw, true, nil); len(all) != len(want)+1 || all[0].Name != "common_type" {
		t.Errorf("with common fields: %+v", all)
	}
	// Out of bounds: a short record keeps the fields it holds; a data_loc pointing past
	// the end is left out.
	short := f.Decode(raw[:20], false, nil)
	if len(short) != 3 {
		t.Errorf("20 bytes decoded %+v", short)
	}
	binary.LittleEndian.PutUint32(raw[32:], 100<<16|48)
	for _, v := range f.Decode(raw, false, nil) {
		if v.Name == "path" {
			t.Errorf("a data_loc past the end decoded: %+v", v)
		}
	}
}

func TestDecodeRealSwitch(t *testing.T) {
	sw := readFormat(t, "sched_switch")
	raw := make([]byte, 68)
	copy(raw[8:], "bash")
	binary.LittleEndian.PutUint32(raw[24:], 1234)
	binary.LittleEndian.PutUint32(raw[28:], 120)
	binary.LittleEndian.PutUint64(raw[32:], 1)
	copy(raw[40:], "swapper/0")
	var line string
	for _, v := range sw.Decode(raw, false, nil) {
		line += v.Name + "=" + FormatValue(v) + " "
	}
	if want := "prev_comm=bash prev_pid=1234 prev_prio=120 prev_state=1 next_comm=swapper/0 next_pid=0 next_prio=0 "; line != want {
		t.Errorf("got  %q\nwant %q", line, want)
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"sched_switch", "sys_enter_write", "block_rq_issue", "sched_prepare_exec"} {
		b, err := os.ReadFile(filepath.Join("testdata", "formats", name+".format"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, make([]byte, 64))
	}
	f.Fuzz(func(t *testing.T, format, raw []byte) {
		fm, err := Parse(format)
		if err != nil {
			return
		}
		if len(fm.Fields) == 0 || len(fm.Fields) > MaxFields {
			t.Fatalf("%d fields", len(fm.Fields))
		}
		for _, v := range fm.Decode(raw, true, nil) {
			if len(v.Str) > len(raw) || len(v.List) > len(raw) {
				t.Fatalf("%s: more than the raw data: %+v", v.Name, v)
			}
			_ = FormatValue(v)
			_ = v.Any()
		}
	})
}

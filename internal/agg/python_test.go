package agg

import (
	"reflect"
	"strings"
	"testing"
)

func TestPythonName(t *testing.T) {
	for _, c := range []struct {
		in, name, file string
		ok             bool
	}{
		{"py::spin_b:/srv/app.py", "spin_b (/srv/app.py)", "/srv/app.py", true},
		{"py::<module>:/srv/app.py", "<module> (/srv/app.py)", "/srv/app.py", true},
		{"py::Handler.get.<locals>.f:/srv/a:b.py", "Handler.get.<locals>.f (/srv/a:b.py)", "/srv/a:b.py", true},
		{"py::spin_b", "spin_b", "", true},
		{"py::spin_b:", "spin_b", "", true},
		{"py::", "", "", false},
		{"py:::/srv/app.py", "", "", false},
		{"spin_b", "", "", false},
		{"Py::spin_b:/x.py", "", "", false},
	} {
		name, file, ok := PythonName(c.in)
		if name != c.name || file != c.file || ok != c.ok {
			t.Errorf("PythonName(%q) = %q, %q, %v; want %q, %q, %v", c.in, name, file, ok, c.name, c.file, c.ok)
		}
	}
	for _, c := range []struct {
		f    Frame
		want bool
	}{
		{Frame{Func: "spin_b (/app.py)", Kind: KindPython}, true},
		{Frame{Func: "py::spin_b:/app.py", Kind: KindJIT}, true}, // a run recorded before kind python
		{Frame{Func: "py::spin_b:/app.py", Kind: KindUser}, false},
		{Frame{Func: "jitted", Kind: KindJIT}, false},
	} {
		if got := IsPython(&c.f); got != c.want {
			t.Errorf("IsPython(%+v) = %v", c.f, got)
		}
	}
	if !IsJITKind(KindJIT) || !IsJITKind(KindPython) || IsJITKind(KindUser) || IsJITKind(KindUnknown) {
		t.Error("IsJITKind")
	}
}

// The python transform keeps frames of kind python (as resolved now) as it keeps the
// py:: JIT frames of older runs (TestTransformPython), and Summarize counts them as JIT.
func TestTransformPythonKind(t *testing.T) {
	native := func(n string) Frame { return Frame{Func: n, Image: "libpython3.12.so.1.0", Kind: KindUser} }
	py := func(n string) Frame {
		return Frame{Func: n + " (/app.py)", Image: "[jit]", Kind: KindPython, File: "/app.py"}
	}
	const (
		start = iota
		eval
		module
		spinA
		alloc
	)
	p := located(&Profile{
		Frames: []Frame{native("_start"), native("_PyEval_EvalFrameDefault"), py("<module>"), py("spin_a"), native("_PyObject_Malloc")},
		Stacks: [][]uint32{
			{alloc, eval, spinA, eval, module, eval, start},
			{spinA, eval, module, eval, start},
		},
		Entries: []Entry{
			{Tid: 1, Pid: 1, Stack: 0, Count: 3, LeafFunc: alloc},
			{Tid: 1, Pid: 1, Stack: 1, Count: 4, LeafFunc: spinA},
		},
		Threads: []ThreadInfo{{Tid: 1, Pid: 1, Name: "main"}},
	})
	got := folded(p.Transform(&Transform{Python: true}))
	want := []string{"1:<module> (/app.py);spin_a (/app.py) 4", "1:<module> (/app.py);spin_a (/app.py);_PyObject_Malloc 3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := Summarize(p); s.JITSamples != 4 || s.JITUnnamed != 0 {
		t.Errorf("summary: %d JIT samples (%d unnamed), want 4 (0)", s.JITSamples, s.JITUnnamed)
	}
}

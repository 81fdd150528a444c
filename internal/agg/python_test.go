package agg

import (
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

package agg

import "strings"

// KindPython is the kind of a Python function's frame: the perf trampoline CPython 3.12+
// puts in front of each Python function it runs with perf support, named py::NAME:FILE in
// its perf map (-X perf) or jitdump (-X perf_jit). The frame is named NAME (FILE), with
// FILE its File; its code is JIT code, in image [jit].
const KindPython = "python"

// pythonPrefix starts the names CPython gives its trampolines in perf maps and jitdumps.
const pythonPrefix = "py::"

// PythonName turns a CPython trampoline's JIT name, py::NAME:FILE, into the frame's name,
// NAME (FILE), and FILE; ok is false for any other name. NAME is a qualified name (no ':'),
// FILE the code object's file name, which may hold ':' itself; a name with no FILE is
// NAME alone.
func PythonName(jitName string) (name, file string, ok bool) {
	rest, ok := strings.CutPrefix(jitName, pythonPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	fn, file, _ := strings.Cut(rest, ":")
	if fn == "" {
		return "", "", false
	}
	if file == "" {
		return fn, "", true
	}
	return fn + " (" + file + ")", file, true
}

// IsJITKind says whether frames of this kind are code written at run time: JIT code, and
// Python functions' trampolines.
func IsJITKind(kind string) bool { return kind == KindJIT || kind == KindPython }

// IsPython says whether f is a Python function's frame: kind python, or (in runs recorded
// before that kind existed) a JIT frame named py::NAME:FILE.
func IsPython(f *Frame) bool {
	return f.Kind == KindPython || f.Kind == KindJIT && strings.HasPrefix(f.Func, pythonPrefix)
}

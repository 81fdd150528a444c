// Package ittcollector locates and builds libstax-jitcollector.so, stax's
// collector for the JIT Profiling API (the interface JITs use to report
// their generated code through the library named by INTEL_JIT_PROFILER64).
//
// A program started with the variables returned by [Env] loads the
// collector, which writes a perf jitdump file /tmp/jit-<pid>.dump (or
// $STAX_JIT_DIR/jit-<pid>.dump) with stax's extension records; see
// docs/jitdump-extensions.md. Programs instrumented with the ITT API load it
// too (INTEL_LIBITTNOTIFY64), and their tasks and markers go to
// itt-<pid>.spans in the same directory. The collector itself is C (collector/
// in the source tree); it contains no Go code.
package ittcollector

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/stax-profiler/stax/internal/collectorabi"
)

// LibName is the file name of the collector library.
const LibName = collectorabi.LibName

// Environment variables read by JITs and by the collector (see package collectorabi).
const (
	EnvProfiler64 = collectorabi.EnvJITProfiler64
	EnvCollect    = collectorabi.EnvCollect
	EnvDir        = collectorabi.EnvDir
	EnvITT64      = collectorabi.EnvITT64
)

// SourceFile is the collector's C source, relative to the source directory.
const SourceFile = "stax_jitcollector.c"

// Env returns the environment entries that make a JIT started with them
// report its code, and a program instrumented with the ITT API its tasks and
// markers, to the collector at libPath.
func Env(libPath string) []string {
	return []string{EnvProfiler64 + "=" + libPath, EnvITT64 + "=" + libPath, EnvCollect + "=1"}
}

// Find returns the path of the installed collector library: beside the
// running executable, or in ../lib/stax/ relative to it.
func Find() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locating %s: %w", LibName, err)
	}
	dirs := []string{filepath.Dir(exe)}
	if real, err := filepath.EvalSymlinks(exe); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	return findIn(dirs...)
}

// candidates lists where Find looks for the library, for executables in dirs.
func candidates(dirs ...string) []string {
	var c []string
	for _, d := range dirs {
		c = append(c, filepath.Join(d, LibName), filepath.Join(d, "..", "lib", "stax", LibName))
	}
	return c
}

func findIn(dirs ...string) (string, error) {
	c := candidates(dirs...)
	for _, p := range c {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			abs, err := filepath.Abs(p)
			if err != nil {
				return "", err
			}
			return abs, nil
		}
	}
	return "", fmt.Errorf("JIT collector %s not found (looked for %s); build it with collector/build.sh",
		LibName, strings.Join(c, ", "))
}

// SourceDir returns the directory holding the collector's C sources: the
// collector directory of the stax source tree this package was compiled
// from, or of the current directory or one of its parents.
func SourceDir() (string, error) {
	var tried []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		d := filepath.Join(filepath.Dir(file), "..", "..", "collector")
		if isSourceDir(d) {
			return filepath.Clean(d), nil
		}
		tried = append(tried, d)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			c := filepath.Join(d, "collector")
			if isSourceDir(c) {
				return c, nil
			}
			tried = append(tried, c)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", fmt.Errorf("collector sources (%s) not found in %s", SourceFile, strings.Join(tried, ", "))
}

func isSourceDir(d string) bool {
	st, err := os.Stat(filepath.Join(d, SourceFile))
	return err == nil && st.Mode().IsRegular()
}

// Build compiles the collector library into outDir with collector/build.sh (which reads
// the sources and flags from build.conf; compiler: $CC, default cc) and returns the
// library's path.
func Build(outDir string) (string, error) { return build(outDir) }

// build is Build, with extra compiler flags after build.conf's.
func build(outDir string, extra ...string) (string, error) {
	src, err := SourceDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	out, err := filepath.Abs(filepath.Join(outDir, LibName))
	if err != nil {
		return "", err
	}
	cmd := exec.Command("/bin/sh", filepath.Join(src, "build.sh"), filepath.Dir(out))
	cmd.Env = append(os.Environ(), "COLLECTOR_EXTRA_CFLAGS="+strings.Join(extra, " "))
	if err := runOut(cmd); err != nil {
		return "", fmt.Errorf("building %s: %w", LibName, err)
	}
	if st, err := os.Stat(out); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("building %s: build.sh made no %s", LibName, out)
	}
	return out, nil
}

// BuildTestJIT compiles collector/testdata/ittjit.c, a small JIT that
// generates, reports and runs x86-64 code through the JIT Profiling API,
// into outDir and returns the program's path. Its usage and output are
// described at the top of the source file.
func BuildTestJIT(outDir string) (string, error) {
	return buildTestProgram(outDir, "ittjit")
}

// buildTestProgram compiles collector/testdata/<name>.c into outDir/<name>,
// with extra compiler flags.
func buildTestProgram(outDir, name string, extra ...string) (string, error) {
	src, err := SourceDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	out, err := filepath.Abs(filepath.Join(outDir, name))
	if err != nil {
		return "", err
	}
	args := []string{"-std=gnu11", "-Wall", "-Wextra", "-O2", "-fPIC", "-pthread"}
	args = append(args, extra...)
	args = append(args, "-o", out, filepath.Join(src, "testdata", name+".c"), "-ldl")
	if err := runCC(args); err != nil {
		return "", fmt.Errorf("building %s: %w", name, err)
	}
	return out, nil
}

// runCC runs the C compiler ($CC, default cc) with args.
func runCC(args []string) error {
	cc := strings.Fields(os.Getenv("CC"))
	if len(cc) == 0 {
		cc = []string{"cc"}
	}
	return runOut(exec.Command(cc[0], append(cc[1:], args...)...))
}

// runOut runs cmd, its output in the error when it fails.
func runOut(cmd *exec.Cmd) error {
	output, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(output))
		if msg == "" {
			return err
		}
		return errors.New(err.Error() + ": " + msg)
	}
	return nil
}

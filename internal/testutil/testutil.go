// Package testutil helps tests build fixture programs from source and decide whether
// perf_event_open may be used.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RequirePerf skips the test when perf_event_open is not allowed here, and fails it instead
// when STAX_REQUIRE_PERF=1 (CI sets it, so perf tests cannot silently skip there).
func RequirePerf(t testing.TB) {
	t.Helper()
	if err := perfAllowed(); err != nil {
		if os.Getenv("STAX_REQUIRE_PERF") == "1" {
			t.Fatalf("perf_event_open is not allowed here (%v) and STAX_REQUIRE_PERF=1", err)
		}
		t.Skipf("perf_event_open is not allowed here: %v", err)
	}
}

var (
	perfOnce sync.Once
	perfErr  error
)

func perfAllowed() error {
	perfOnce.Do(func() {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Sample: 1000,
			Bits:   unix.PerfBitDisabled | unix.PerfBitExcludeKernel,
		}
		fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			perfErr = err
			return
		}
		unix.Close(fd)
	})
	return perfErr
}

// RepoRoot returns the module root.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Run runs a command and fails the test with its output when it fails.
func Run(t testing.TB, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// CC compiles C or C++ sources into an executable in dir and returns its path.
func CC(t testing.TB, dir, out string, compiler string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		t.Skipf("%s is not installed", compiler)
	}
	path := filepath.Join(dir, out)
	Run(t, "", compiler, append(args, "-o", path)...)
	return path
}

var (
	staxOnce sync.Once
	staxPath string
	staxErr  error
	staxDir  string
)

// Stax builds the stax binary (and the collector library beside it) once per test process
// and returns its path. Under -race the binary is built with -race, and a data race it
// finds makes it exit with status 66 and a report on stderr.
func Stax(t testing.TB) string {
	t.Helper()
	staxOnce.Do(func() {
		staxDir, staxErr = os.MkdirTemp("", "stax-bin-")
		if staxErr != nil {
			return
		}
		staxPath = filepath.Join(staxDir, "stax")
		args := []string{"build", "-o", staxPath}
		if Race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/stax")...)
		cmd.Dir = RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			staxErr = err
			staxPath = string(out)
			return
		}
		// The JIT Profiling API collector ships beside the binary.
		cmd = exec.Command("collector/build.sh", staxDir)
		cmd.Dir = RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			staxErr = err
			staxPath = string(out)
		}
	})
	if staxErr != nil {
		t.Fatalf("build stax: %v\n%s", staxErr, staxPath)
	}
	return staxPath
}

// StaxDeps lists the stax packages that package pkg (a path from the module root, like
// ./internal/client) imports, directly or not, without its tests.
func StaxDeps(t testing.TB, pkg string) []string {
	t.Helper()
	out := Run(t, RepoRoot(t), "go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	var deps []string
	for _, p := range strings.Fields(out) {
		if rest, ok := strings.CutPrefix(p, "github.com/stax-profiler/stax/"); ok {
			deps = append(deps, rest)
		}
	}
	return deps
}

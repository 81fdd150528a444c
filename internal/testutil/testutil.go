// Package testutil helps tests build fixture programs from source and decide whether what
// they need (perf_event_open, root, a program, a file, a kernel feature) is there.
package testutil

import (
	"fmt"
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

// The environment variables that turn a missing requirement from a skip into a failure.
// CI sets all three (.ci/run), so nothing CI provides can go untested there unnoticed.
const (
	// EnvPerf: perf_event_open is allowed, and what .ci/run installs is there: compilers,
	// binutils, perf, debuginfod, libc6-dbg, xz, util-linux, curl, node and npm, java, php;
	// and so are the kernel features the tests rely on (a vdso).
	EnvPerf = "STAX_REQUIRE_PERF"
	// EnvRoot: the tests run as root (to switch users, read the kernel's symbols, make
	// namespaces, record system-wide).
	EnvRoot = "STAX_REQUIRE_ROOT"
	// EnvBrowser: a headless Chromium is there (internal/testutil/browser).
	EnvBrowser = "STAX_REQUIRE_BROWSER"
)

// Require skips the test for want of what the message (format and args) names, or fails it
// where the environment variable env (EnvPerf, EnvRoot, EnvBrowser) is "1". Every test that
// skips for want of something CI provides goes through it. Under -short (`make test-unit`)
// such a test is always skipped: the unit tests need no root, no perf and no browser.
func Require(t testing.TB, env, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if unitOnly() {
		t.Skip("-short runs the unit tests only; this one needs more: " + msg)
	}
	if os.Getenv(env) == "1" {
		t.Fatalf("%s, and %s=1 says it must be there", msg, env)
	}
	t.Skip(msg)
}

// unitOnly says whether only the unit tests run (go test -short).
var unitOnly = testing.Short

// RequirePerf skips the test when perf_event_open is not allowed here, and fails it instead
// when STAX_REQUIRE_PERF=1.
func RequirePerf(t testing.TB) {
	t.Helper()
	if unitOnly() {
		Require(t, EnvPerf, "the test opens perf events")
	}
	if err := perfAllowed(); err != nil {
		Require(t, EnvPerf, "perf_event_open is not allowed here: %v", err)
	}
}

// RequireRoot skips the test unless it runs as root, and fails it instead when
// STAX_REQUIRE_ROOT=1.
func RequireRoot(t testing.TB) {
	t.Helper()
	if unitOnly() {
		Require(t, EnvRoot, "the test needs root")
	}
	if uid := os.Geteuid(); uid != 0 {
		Require(t, EnvRoot, "the test needs root (it runs as uid %d)", uid)
	}
}

// RequireTool returns the path of a program .ci/run installs; where it is missing the test
// is skipped, or fails when STAX_REQUIRE_PERF=1.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Require(t, EnvPerf, "%s is not installed (.ci/run installs it)", name)
	}
	return path
}

// RequireFile checks that a file a package .ci/run installs (pkg) is there; where it is
// missing the test is skipped, or fails when STAX_REQUIRE_PERF=1.
func RequireFile(t testing.TB, path, pkg string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Require(t, EnvPerf, "%s is missing (apt-get install %s): %v", path, pkg, err)
	}
}

// Libc is the C library the tests that read one use: Debian's, on x86-64.
const Libc = "/lib/x86_64-linux-gnu/libc.so.6"

// RequireLibc returns Libc. Its path and what the tests expect of it are those of x86-64
// Debian, which CI runs: on another architecture the test is skipped; on x86-64 a missing
// libc skips it, or fails it when STAX_REQUIRE_PERF=1.
func RequireLibc(t testing.TB) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the test reads x86-64 Debian's libc; this is %s", runtime.GOARCH)
	}
	RequireFile(t, Libc, "libc6")
	return Libc
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
	RequireTool(t, compiler)
	path := filepath.Join(dir, out)
	Run(t, "", compiler, append(args, "-o", path)...)
	return path
}

// Stax builds the stax binary (and the collector library beside it) once per test process
// and returns its path. Under -race the binary is built with -race, and a data race it
// finds makes it exit with status 66 and a report on stderr.
func Stax(t testing.TB) string {
	t.Helper()
	return staxRace.get(t, Race)
}

// StaxPlain is Stax built without the race detector, for the tests that measure what stax
// costs (its memory, its speed recording a whole machine): a race-detector build takes
// several times the memory and CPU, and says nothing of stax's.
func StaxPlain(t testing.TB) string {
	t.Helper()
	if !Race {
		return Stax(t)
	}
	return staxPlain.get(t, false)
}

// staxBuild is one build of stax, made once per test process.
type staxBuild struct {
	once sync.Once
	path string // the binary, or the build's output when it failed
	err  error
}

var staxRace, staxPlain staxBuild

func (b *staxBuild) get(t testing.TB, race bool) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "stax-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "stax")
		args := []string{"build", "-o", b.path}
		if race {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/stax")...)
		cmd.Dir = RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err, b.path = err, string(out)
			return
		}
		// The JIT Profiling API collector ships beside the binary.
		cmd = exec.Command("collector/build.sh", dir)
		cmd.Dir = RepoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err, b.path = err, string(out)
		}
	})
	if b.err != nil {
		t.Fatalf("build stax: %v\n%s", b.err, b.path)
	}
	return b.path
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

package ittcollector

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/jit/jitformat"
)

// requireTSan skips the test when ThreadSanitizer programs cannot be built or run here,
// and fails it instead when STAX_REQUIRE_PERF=1 (CI), so the check cannot silently vanish.
func requireTSan(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("STAX_REQUIRE_PERF") == "1" {
		t.Fatalf("%s, and STAX_REQUIRE_PERF=1", why)
	}
	t.Skip(why)
}

// tsanRun runs a ThreadSanitizer program, under setarch -R (no address space
// randomisation) when the sanitizer cannot map its shadow memory otherwise. It returns
// false when it cannot run there at all.
func tsanRun(t *testing.T, env []string, argv ...string) (stdout, stderr string, err error, ok bool) {
	t.Helper()
	try := func(argv []string) (string, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "STAX_JIT_") && !strings.HasPrefix(e, "INTEL_JIT_PROFILER") && !strings.HasPrefix(e, "INTEL_LIBITTNOTIFY") && !strings.HasPrefix(e, "TSAN_OPTIONS=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("%v: timed out (deadlock?)\n%s", argv, errb.String())
		}
		return out.String(), errb.String(), err
	}
	unmapped := func(stderr string) bool {
		return strings.Contains(stderr, "FATAL: ThreadSanitizer") || strings.Contains(stderr, "ThreadSanitizer: unexpected memory mapping")
	}
	stdout, stderr, err = try(argv)
	if !unmapped(stderr) {
		return stdout, stderr, err, true
	}
	setarch, lerr := exec.LookPath("setarch")
	if lerr != nil {
		return stdout, stderr, err, false
	}
	arch, aerr := exec.Command("uname", "-m").Output()
	if aerr != nil {
		return stdout, stderr, err, false
	}
	stdout, stderr, err = try(append([]string{setarch, strings.TrimSpace(string(arch)), "-R"}, argv...))
	return stdout, stderr, err, !unmapped(stderr) && !strings.Contains(stderr, "setarch:")
}

// buildTSan builds the collector with ThreadSanitizer into a temporary directory, or skips
// the test where such programs cannot be built or run. It returns the directory, the
// library and the compiler flags for programs that load it.
func buildTSan(t *testing.T) (dir, lib string, tsan []string) {
	t.Helper()
	needBuild(t)
	dir = t.TempDir()
	probe := filepath.Join(dir, "probe.c")
	os.WriteFile(probe, []byte("int main(void) { return 0; }\n"), 0o644)
	if err := runCC([]string{"-fsanitize=thread", "-o", filepath.Join(dir, "probe"), probe}); err != nil {
		requireTSan(t, "the C compiler cannot build ThreadSanitizer programs (gcc needs libtsan): "+err.Error())
	}
	if _, stderr, err, ok := tsanRun(t, nil, filepath.Join(dir, "probe")); !ok || err != nil {
		requireTSan(t, "ThreadSanitizer programs do not run here: "+strings.TrimSpace(stderr))
	}
	tsan = []string{"-fsanitize=thread", "-g", "-O1"}
	lib, err := build(filepath.Join(dir, "tsan"), tsan...)
	if err != nil {
		t.Fatalf("build the collector with ThreadSanitizer: %v", err)
	}
	return dir, lib, tsan
}

// The ITT part under ThreadSanitizer: threads run nested tasks and markers while the
// others exit or the process exits under them; no data race is reported.
func TestITTThreadSanitizer(t *testing.T) {
	dir, lib, tsan := buildTSan(t)
	drv, err := buildTestProgram(dir, "itttasks", tsan...)
	if err != nil {
		t.Fatal(err)
	}
	threads := strconv.Itoa(max(8, runtime.NumCPU()))
	for _, mode := range []string{"join", "exit"} {
		t.Run(mode, func(t *testing.T) {
			out := t.TempDir()
			env := append(Env(lib), EnvDir+"="+out, "TSAN_OPTIONS=halt_on_error=0 exitcode=66")
			_, stderr, err, ok := tsanRun(t, env, drv, threads, "200", "70", mode)
			if !ok {
				t.Fatalf("the driver did not run under ThreadSanitizer:\n%s", stderr)
			}
			if strings.Contains(stderr, "WARNING: ThreadSanitizer") || err != nil {
				t.Fatalf("%s %s: %v\n%s", filepath.Base(drv), mode, err, stderr)
			}
		})
	}
}

// The collector under ThreadSanitizer, with many threads sending events while SHUTDOWN
// arrives or the process exits: no data race is reported.
func TestCollectorThreadSanitizer(t *testing.T) {
	dir, lib, tsan := buildTSan(t)
	drv, err := buildTestProgram(dir, "itttsan", tsan...)
	if err != nil {
		t.Fatal(err)
	}

	threads := strconv.Itoa(max(8, runtime.NumCPU()))
	for _, mode := range []string{"shutdown", "exit"} {
		t.Run(mode, func(t *testing.T) {
			out := t.TempDir()
			env := append(Env(lib), EnvDir+"="+out, "TSAN_OPTIONS=halt_on_error=0 exitcode=66")
			stdout, stderr, err, ok := tsanRun(t, env, drv, mode, threads, "300")
			if !ok {
				t.Fatalf("the driver did not run under ThreadSanitizer:\n%s", stderr)
			}
			if strings.Contains(stderr, "WARNING: ThreadSanitizer") || err != nil {
				t.Fatalf("%s %s: %v\n%s", filepath.Base(drv), mode, err, stderr)
			}
			pid := h0pid(t, stdout)
			data, rerr := os.ReadFile(filepath.Join(out, "jit-"+strconv.Itoa(pid)+".dump"))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if hs := jitformat.HeaderSize + jitformat.StaxLostSize; mode == "exit" && len(data) >= hs+jitformat.RecordPrefixSize {
				// a thread killed by the exit in the middle of its write leaves a
				// partial record: only the header and the first record are checked
				if n := hs + int(le.Uint32(data[hs+4:])); n <= len(data) {
					data = data[:n]
				}
			}
			h, recs, perr := parseDump(data)
			if perr != nil {
				t.Fatalf("dump: %v", perr)
			}
			checkHeader(t, h, pid)
			if len(recs) == 0 {
				t.Errorf("the dump holds no records")
			}
		})
	}
}

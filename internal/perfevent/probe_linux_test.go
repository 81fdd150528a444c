package perfevent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/testutil"
)

// What the kernel's refusals to open a probe mean, in one line that says what to do.
func TestProbeOpenError(t *testing.T) {
	kp, _ := ParseEvent("kprobe:vfs_read+3")
	up, _ := ParseEvent("uretprobe:/bin/app:f")
	up.Probe.Path, up.Probe.FileOffset = "/bin/app", 0x1139
	for _, tc := range []struct {
		ev   EventSpec
		err  error
		want string
	}{
		{kp, unix.EACCES, "event kprobe:vfs_read+3: kprobes and uprobes take root or CAP_PERFMON, whatever kernel.perf_event_paranoid says (it is 2)"},
		{up, unix.EPERM, "event uretprobe:/bin/app:f: kprobes and uprobes take root or CAP_PERFMON"},
		{kp, unix.ENOENT, "the kernel has no function vfs_read"},
		{kp, unix.EILSEQ, "vfs_read+3 is not at the start of an instruction"},
		{kp, unix.EINVAL, "the kernel refuses to probe vfs_read+3"},
		{up, unix.EINVAL, "the kernel refuses a uprobe at offset 0x1139 of /bin/app"},
		{up, unix.ENOENT, "the kernel finds no file /bin/app"},
		{up, unix.EBUSY, "the kernel refuses to open the uretprobe: device or resource busy"},
	} {
		err := probeOpenError(tc.ev, tc.err, "2")
		if !errors.Is(err, ErrEventSyntax) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s, %v: %v; want one line with %q", tc.ev.Name, tc.err, err, tc.want)
		}
	}
}

// /proc/kallsyms names the kernel's functions, whoever reads it.
func TestKernelFunction(t *testing.T) {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		t.Skipf("/proc/kallsyms is not readable here: %v", err)
	}
	var fn string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[1] == "T" {
			fn = f[2]
		}
	}
	if fn == "" {
		t.Skip("/proc/kallsyms lists no function")
	}
	if found, known := kernelFunction(fn); !found || !known {
		t.Errorf("%s: found %v, known %v", fn, found, known)
	}
	if found, known := kernelFunction("stax_no_such_function"); found || !known {
		t.Errorf("stax_no_such_function: found %v, known %v", found, known)
	}
}

// pmuType is the type of the PMU named, from sysfs; false where the kernel has none.
func pmuType(t *testing.T, pmu string) (uint32, bool) {
	b, err := os.ReadFile(filepath.Join(pmuDevices, pmu, "type"))
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		t.Fatalf("%s type %q", pmu, b)
	}
	return uint32(v), true
}

// Resolved, a probe is the PMU's event with the return bit of its format, its target's
// offset in config2, and a target the kernel opens; what it cannot open is refused in one
// line.
func TestResolveProbe(t *testing.T) {
	testutil.RequirePerf(t)
	testutil.RequireRoot(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.c"), []byte(probeMain), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.c"), []byte(probeOther), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := testutil.CC(t, dir, "prog", "gcc", "-O1", filepath.Join(dir, "main.c"), filepath.Join(dir, "other.c"))
	want, _, err := SymbolFileOffset(prog, "marked")
	if err != nil {
		t.Fatal(err)
	}
	typ, ok := pmuType(t, uprobePMU)
	if !ok {
		t.Skip("this kernel has no uprobe PMU")
	}
	for _, tc := range []struct {
		name    string
		offset  uint64
		retprob bool
	}{
		{"uprobe:" + prog + ":marked", want, false},
		{"uprobe:" + prog + ":marked+1", want + 1, false},
		{"uretprobe:" + prog + ":marked", want, true},
		{fmt.Sprintf("uprobe:%s:%#x", prog, want), want, false},
	} {
		ev, err := ParseEvent(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if err := ResolveEvent(&ev); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if ev.Type != typ || ev.Config2 != tc.offset || (ev.Config != 0) != tc.retprob || ev.Probe.Path != prog || ev.Name != tc.name {
			t.Errorf("%s: type %d config %#x config2 %#x path %s; want type %d, config2 %#x, retprobe %v", tc.name, ev.Type, ev.Config, ev.Config2, ev.Probe.Path, typ, tc.offset, tc.retprob)
		}
		if err := CheckEvent(ev); err != nil {
			t.Errorf("%s: the kernel does not open it: %v", tc.name, err)
		}
	}
	for _, tc := range []struct{ name, why string }{
		{"uprobe:" + prog + ":nope", "has no symbol nope"},
		{"uprobe:" + prog + ":marked+7", "+7 is past the end of marked, which is 7 bytes"},
		{"uprobe:" + prog + ":0xfffffff", "the kernel refuses a uprobe at offset 0xfffffff"},
		{"kprobe:stax_no_such_function", "the kernel has no function stax_no_such_function (/proc/kallsyms"},
	} {
		ev, err := ParseEvent(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		err = ResolveEvent(&ev)
		if err == nil || !errors.Is(err, ErrEventSyntax) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: %v; want an error saying %q", tc.name, err, tc.why)
		}
	}
	ev, _ := ParseEvent("kprobe:do_sys_openat2")
	err = ResolveEvent(&ev)
	if _, ok := pmuType(t, kprobePMU); !ok {
		if err == nil || !strings.Contains(err.Error(), "this kernel has no kprobe PMU") {
			t.Errorf("kprobe:do_sys_openat2 without a kprobe PMU: %v", err)
		}
	} else if found, _ := kernelFunction("do_sys_openat2"); found && err != nil {
		t.Errorf("kprobe:do_sys_openat2: %v", err)
	}
}

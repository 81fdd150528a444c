package perfevent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel's PMUs of probes (Linux 4.17 and later): an event of theirs creates its
// kprobe or uprobe when it is opened and removes it when it is closed, so nothing is
// written to tracefs and nothing stays behind.
const (
	kprobePMU = "kprobe"
	uprobePMU = "uprobe"
)

// ProbePMUs says which of the probe PMUs (kprobe, uprobe) the kernel has.
func ProbePMUs() (kprobe, uprobe bool) {
	_, kerr := os.Stat(filepath.Join(pmuDevices, kprobePMU, "type"))
	_, uerr := os.Stat(filepath.Join(pmuDevices, uprobePMU, "type"))
	return kerr == nil, uerr == nil
}

// probeKind is the name of p's kind, as -e spells it.
func probeKind(p *Probe) string {
	switch {
	case p.User && p.Return:
		return "uretprobe"
	case p.User:
		return "uprobe"
	case p.Return:
		return "kretprobe"
	}
	return "kprobe"
}

// resolveProbe sets a probe event's type, config and target from the machine: the
// kernel function in /proc/kallsyms, or the uprobe's file and its symbol's file offset,
// and the PMU's type and retprobe bit from sysfs; then opens it once, as a counter of
// this thread, so that what the kernel refuses is said now, in one line. Every error
// wraps ErrEventSyntax: the -e event cannot be recorded.
func resolveProbe(ev *EventSpec) error {
	p := *ev.Probe // resolved into a copy: ev's Probe may be another spec's too
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrEventSyntax, ev.Name, fmt.Sprintf(format, args...))
	}
	pmu := kprobePMU
	if p.User {
		pmu = uprobePMU
		path, err := ProbePath(p.Path)
		if err != nil {
			return fail("%s", strings.TrimPrefix(err.Error(), errProbeTarget.Error()+": "))
		}
		p.Path, p.FileOffset = path, p.Offset
		if p.Func != "" {
			off, size, err := SymbolFileOffset(path, p.Func)
			if err != nil {
				return fail("%s", strings.TrimPrefix(err.Error(), errProbeTarget.Error()+": "))
			}
			if size > 0 && p.Offset >= size {
				return fail("+%d is past the end of %s, which is %d bytes", p.Offset, p.Func, size)
			}
			p.FileOffset = off + p.Offset
		}
		p.target = append([]byte(path), 0)
	} else {
		if found, known := kernelFunction(p.Func); known && !found {
			return fail("the kernel has no function %s (/proc/kallsyms lists those it has: grep -w %s /proc/kallsyms; an inlined one has no symbol)", p.Func, p.Func)
		}
		p.target = append([]byte(p.Func), 0)
	}
	dir := filepath.Join(pmuDevices, pmu)
	b, err := readSmall(filepath.Join(dir, "type"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fail("this kernel has no %s PMU (%s/%s: Linux 4.17 or later, built with CONFIG_%s_EVENTS, has one); stax list-events lists the events it has",
				pmu, pmuDevices, pmu, strings.ToUpper(pmu))
		}
		return fail("%v", err)
	}
	typ, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return fail("the %s PMU's type %q is not a number", pmu, strings.TrimSpace(string(b)))
	}
	var words [3]uint64
	if p.Return {
		fb, err := readSmall(filepath.Join(dir, "format", "retprobe"))
		if err != nil {
			return fail("the %s PMU has no return probes (%s/format/retprobe: %v)", pmu, dir, err)
		}
		f, err := ParseFormat(string(fb))
		if err != nil || !f.Apply(&words, 1) {
			return fail("the %s PMU's retprobe format %q is not one stax reads", pmu, strings.TrimSpace(string(fb)))
		}
	}
	if p.User {
		words[2] = p.FileOffset
	} else {
		words[2] = p.Offset
	}
	ev.Type, ev.Config, ev.Config1, ev.Config2, ev.Probe = uint32(typ), words[0], words[1], words[2], &p
	if err := tryOpen(*ev); err != nil {
		return probeOpenError(*ev, err, paranoid())
	}
	return nil
}

// setProbe points a's config1 at ev's probe target (a kprobe's function, a uprobe's
// path), for perf_event_open: the call must keep ev's Probe alive until it returns
// (keepProbes).
func setProbe(a *unix.PerfEventAttr, ev EventSpec) {
	if ev.Probe == nil || len(ev.Probe.target) == 0 {
		return
	}
	a.Ext1 = uint64(uintptr(unsafe.Pointer(&ev.Probe.target[0])))
}

// keepProbes keeps the probe targets of events alive until here: the attrs of a
// perf_event_open before it point at them (setProbe), where the collector does not look.
func keepProbes(events []EventSpec) { runtime.KeepAlive(events) }

// probeOpenError says what the kernel's refusal (err) to open probe event ev means, and
// what to do; paranoid is kernel.perf_event_paranoid.
func probeOpenError(ev EventSpec, err error, paranoid string) error {
	p := ev.Probe
	kind := probeKind(p)
	var why string
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		why = fmt.Sprintf("kprobes and uprobes take root or CAP_PERFMON, whatever kernel.perf_event_paranoid says (it is %s): run stax as root, or grant it CAP_PERFMON", paranoid)
	case p.User && errors.Is(err, unix.EINVAL):
		why = fmt.Sprintf("the kernel refuses a uprobe at offset 0x%x of %s (%v): the offset must be in the file, at an instruction", p.FileOffset, p.Path, err)
	case p.User && errors.Is(err, unix.ENOENT):
		why = fmt.Sprintf("the kernel finds no file %s (%v)", p.Path, err)
	case !p.User && errors.Is(err, unix.ENOENT):
		why = fmt.Sprintf("the kernel has no function %s (%v): /proc/kallsyms lists those it has", p.Func, err)
	case !p.User && errors.Is(err, unix.EILSEQ):
		why = fmt.Sprintf("%s+%d is not at the start of an instruction (%v): probe the function's entry, or an offset objdump -d shows", p.Func, p.Offset, err)
	case !p.User && errors.Is(err, unix.EINVAL):
		what := p.Func
		if p.Offset > 0 {
			what = fmt.Sprintf("%s+%d", p.Func, p.Offset)
		}
		why = fmt.Sprintf("the kernel refuses to probe %s (%v): a function of the kprobe blacklist (/sys/kernel/debug/kprobes/blacklist), marked notrace, or an offset outside it", what, err)
	default:
		why = fmt.Sprintf("the kernel refuses to open the %s: %v", kind, err)
	}
	return fmt.Errorf("%w %s: %s", ErrEventSyntax, ev.Name, why)
}

// maxKallsyms bounds the lines of /proc/kallsyms read.
const maxKallsyms = 8 << 20

// kernelFunction says whether /proc/kallsyms names a function fn (of the kernel or of a
// loaded module); known is false when it could not be read.
func kernelFunction(fn string) (found, known bool) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return false, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		if n++; n > maxKallsyms {
			return false, false
		}
		// "ffffffff816d2230 t do_sys_openat2", or "... [module]" after it.
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == fn {
			switch fields[1] {
			case "t", "T", "w", "W":
				return true, true
			}
		}
	}
	if sc.Err() != nil || n == 0 {
		return false, false
	}
	return false, true
}

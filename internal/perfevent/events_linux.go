package perfevent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
)

// eventState is what a session keeps of the events it samples (Config.Events).
type eventState struct {
	// ids maps the id of each event past the first (the sampling events the session
	// opened beside the first's) to its index in Config.Events.
	ids map[uint64]int
	// fixed maps the id of each sampling event with a fixed period to the period: their
	// samples carry no period (FixedPeriod).
	fixed map[uint64]uint64
}

// FixedPeriod says whether a sample's id (perfrecord.Sample.ID) is that of an event sampled
// with a fixed period, and the period: such samples are laid out without
// perfrecord.SamplePeriod. For a software event the kernel would otherwise take a sample at
// every event, each of period 1, whatever the period asked for (as perf record -c does,
// stax leaves the period out and knows it).
func (s *Session) FixedPeriod(id uint64) (uint64, bool) {
	p, ok := s.events.fixed[id]
	return p, ok
}

// EventOf is the index in Config.Events of the event a sample's id (perfrecord.Sample.ID)
// belongs to: 0, the first event, for any id but the other events' (the first event's
// own, reopened by ResizeStack, have ids of their own).
func (s *Session) EventOf(id uint64) int { return s.events.ids[id] }

// pmuDevices is where the kernel lists its PMUs.
const pmuDevices = "/sys/bus/event_source/devices"

// setPeriod sets a's sampling as ev asks: every ev.Period events, or ev.Freq (else freq)
// times a second.
func setPeriod(a *unix.PerfEventAttr, ev EventSpec, freq int) {
	a.Ext1, a.Ext2 = ev.Config1, ev.Config2
	setProbe(a, ev)
	if ev.Period > 0 {
		a.Bits &^= unix.PerfBitFreq
		a.Sample = ev.Period
		a.Sample_type &^= perfrecord.SamplePeriod
		return
	}
	a.Bits |= unix.PerfBitFreq
	a.Sample = uint64(freq)
	if ev.Freq > 0 {
		a.Sample = uint64(ev.Freq)
	}
}

// firstEventPeriod gives a, the attr of the first of cfg.Events (typ, config), that
// event's sampling.
func firstEventPeriod(cfg Config, a *unix.PerfEventAttr, typ uint32, config uint64) {
	if len(cfg.Events) == 0 || typ != cfg.Events[0].Type || config != cfg.Events[0].Config {
		return
	}
	setPeriod(a, cfg.Events[0], cfg.Freq)
}

// openOtherEvents opens the events of cfg.Events past the first for thread pid on cpu,
// writing into ring r (nil: none on that CPU), and keeps their ids.
func (s *Session) openOtherEvents(cfg Config, pid, cpu int, r *mappedRing) error {
	if len(cfg.Events) == 0 || r == nil {
		return nil
	}
	if s.events.ids == nil {
		s.events.ids, s.events.fixed = map[uint64]int{}, map[uint64]uint64{}
	}
	if first := cfg.Events[0]; first.Period > 0 && len(s.sampleFDs) > 0 {
		// The first event's, opened for this thread and CPU just before.
		id, err := eventID(s.sampleFDs[len(s.sampleFDs)-1])
		if err != nil {
			return fmt.Errorf("read the id of %s: %w", first.Name, err)
		}
		s.events.fixed[id] = first.Period
	}
	for i, ev := range cfg.Events[1:] {
		a := s.attr(cfg, ev.Type, ev.Config, cfg.EnableOnExec)
		a.Bits &^= sideBand
		if cfg.SystemWide {
			a.Bits &^= unix.PerfBitInherit
		}
		setPeriod(a, ev, cfg.Freq)
		fd, err := unix.PerfEventOpen(a, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		keepProbes(cfg.Events)
		if err != nil {
			return fmt.Errorf("open %s for pid %d on cpu %d: %w", ev.Name, pid, cpu, err)
		}
		id, err := eventID(fd)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("read the id of %s: %w", ev.Name, err)
		}
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, r.fd); err != nil {
			unix.Close(fd)
			return fmt.Errorf("redirect %s of pid %d on cpu %d: %w", ev.Name, pid, cpu, err)
		}
		s.fds = append(s.fds, fd)
		s.events.ids[id] = i + 1
		if ev.Period > 0 {
			s.events.fixed[id] = ev.Period
		}
	}
	return nil
}

// eventID is the kernel's id of the event open as fd.
func eventID(fd int) (uint64, error) {
	var id uint64
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_ID, uintptr(unsafe.Pointer(&id))); e != 0 {
		return 0, e
	}
	return id, nil
}

// NoPMUError says a hardware event was asked for on a machine that exposes no hardware
// counters (a virtual machine or container without a virtual PMU).
type NoPMUError struct {
	Event string
	PMUs  []string // the event sources the machine has
}

func (e *NoPMUError) Error() string {
	return fmt.Sprintf("this machine exposes no hardware counters: -e %s needs a PMU, and the kernel lists only %s (a virtual machine or container without a virtual PMU); sample a software event instead: cpu-clock, page-faults, context-switches (stax list-events)",
		e.Event, strings.Join(e.PMUs, ", "))
}

// EventSources lists the PMUs the kernel exposes (software, tracepoint, cpu, ...).
func EventSources() []string {
	ents, err := os.ReadDir(pmuDevices)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// HardwareCounters says whether the machine counts hardware events, by opening a cycles
// counter on this thread (user space only, never enabled): ENOENT or EOPNOTSUPP say it
// has no PMU. A refusal for permission is no answer: ok and known are both false then.
func HardwareCounters() (ok, known bool) {
	err := tryOpen(EventSpec{Type: TypeHardware, Config: 0})
	switch {
	case err == nil:
		return true, true
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENODEV):
		return false, true
	}
	return false, false
}

// tryOpen opens ev as a counter of this thread, user space only and disabled, and closes
// it: whether the kernel takes the event here.
func tryOpen(ev EventSpec) error {
	a := &unix.PerfEventAttr{Type: ev.Type, Config: ev.Config, Ext1: ev.Config1, Ext2: ev.Config2,
		Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{}))}
	a.Bits = unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv
	setProbe(a, ev)
	fd, err := unix.PerfEventOpen(a, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	keepProbes([]EventSpec{ev})
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// CheckEvent says whether the kernel opens ev here (as a counter of this thread), with
// ev resolved first (ResolveEvent); a hardware event on a machine without PMU gives a
// *NoPMUError.
func CheckEvent(ev EventSpec) error {
	if err := ResolveEvent(&ev); err != nil {
		return err
	}
	err := tryOpen(ev)
	if err != nil && ev.Hardware() && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV)) {
		if ok, known := HardwareCounters(); !ok && known {
			return &NoPMUError{Event: ev.Name, PMUs: EventSources()}
		}
	}
	return err
}

// ResolveEvent fills in what opening ev takes from this machine: a tracepoint's id from
// tracefs, a PMU event's type and config from sysfs, a probe's type, config and target
// (resolveProbe); and refuses a hardware event where the machine has no PMU
// (*NoPMUError).
func ResolveEvent(ev *EventSpec) error {
	switch {
	case ev.Probe != nil:
		return resolveProbe(ev)
	case ev.Tracepoint != "":
		sys, name, _ := strings.Cut(ev.Tracepoint, ":")
		tp, err := readTracepoint(sys, name)
		if err != nil {
			return fmt.Errorf("tracepoint %s: %w (stax list-events lists them; reading tracefs takes root)", ev.Name, err)
		}
		ev.Config, ev.TraceFormat = tp.id, tp.format
		return nil
	case ev.PMU != "":
		if err := resolvePMU(ev); err != nil {
			return err
		}
	}
	if ev.Hardware() && ev.PMU == "" {
		if ok, known := HardwareCounters(); !ok && known {
			return &NoPMUError{Event: ev.Name, PMUs: EventSources()}
		}
	}
	return nil
}

// resolvePMU sets a pmu/.../ event's type and config words from the PMU's sysfs files.
func resolvePMU(ev *EventSpec) error {
	dir := filepath.Join(pmuDevices, ev.PMU)
	b, err := readSmall(filepath.Join(dir, "type"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if ok, known := HardwareCounters(); !ok && known {
				return &NoPMUError{Event: ev.Name, PMUs: EventSources()}
			}
			return fmt.Errorf("%w %s: this machine has no PMU %q (it has %s)", ErrEventSyntax, ev.Name, ev.PMU, strings.Join(EventSources(), ", "))
		}
		return fmt.Errorf("event %s: %w", ev.Name, err)
	}
	typ, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return fmt.Errorf("event %s: the PMU's type %q is not a number", ev.Name, strings.TrimSpace(string(b)))
	}
	formats := map[string]FormatField{}
	ents, _ := os.ReadDir(filepath.Join(dir, "format"))
	for i, e := range ents {
		if i >= 256 {
			break
		}
		b, err := readSmall(filepath.Join(dir, "format", e.Name()))
		if err != nil {
			continue
		}
		if f, err := ParseFormat(string(b)); err == nil {
			formats[e.Name()] = f
		}
	}
	ev.Type = uint32(typ)
	return ev.ApplyTerms(formats)
}

// maxAvailableEvents bounds tracefs's list of tracepoints.
const maxAvailableEvents = 4 << 20

// Tracepoints lists the kernel's tracepoints as SUBSYSTEM:NAME, from tracefs (mounted at
// /sys/kernel/tracing or /sys/kernel/debug/tracing; reading it usually takes root).
func Tracepoints() ([]string, error) {
	var firstErr error
	for _, dir := range tracefsDirs {
		f, err := os.Open(filepath.Join(dir, "available_events"))
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		b := make([]byte, maxAvailableEvents)
		n, _ := io.ReadFull(f, b)
		f.Close()
		var out []string
		for _, line := range strings.Split(string(b[:n]), "\n") {
			if sys, name, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && traceIdent(sys) && traceIdent(name) {
				out = append(out, sys+":"+name)
			}
		}
		sort.Strings(out)
		return out, nil
	}
	return nil, fmt.Errorf("list tracepoints: %w (tracefs is not mounted, or not readable: root reads it)", firstErr)
}

package perfevent

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// perf_event_attr types (linux/perf_event.h).
const (
	TypeHardware   = 0
	TypeSoftware   = 1
	TypeTracepoint = 2
	TypeHWCache    = 3
	TypeRaw        = 4
)

// Software event configs (PERF_COUNT_SW_*).
const (
	SWCPUClock        = 0
	SWTaskClock       = 1
	SWPageFaults      = 2
	SWContextSwitches = 3
	SWCPUMigrations   = 4
	SWMinorFaults     = 5
	SWMajorFaults     = 6
	SWAlignmentFaults = 7
	SWEmulationFaults = 8
)

// EventSpec is one event stax record samples (-e), as perf names it: a software event,
// a hardware event, a hardware cache event, a raw event (rXXXX), an event of a PMU in
// sysfs (pmu/event=..,umask=../), a tracepoint (sys:name) or a probe (kprobe:FUNC,
// uprobe:PATH:SYMBOL, ...).
type EventSpec struct {
	// Name is the event as the user wrote it, made canonical for the named events
	// ("cs" is "context-switches"): what views are asked for with --event.
	Name   string
	Type   uint32 // perf_event_attr.type; a PMU's own type once resolved (ResolvePMU)
	Config uint64
	// Config1 and Config2 are a PMU event's perf_event_attr.config1 and config2.
	Config1, Config2 uint64
	// Period samples every Period events (-c); 0: frequency mode at Freq.
	Period uint64
	// Freq is the sampling frequency in Hz in frequency mode (0: Config.Freq).
	Freq int
	// PMU names the sysfs PMU of a pmu/.../ event (its terms in Terms until resolved).
	PMU   string
	Terms []Term
	// Tracepoint is "sys:name" for a tracepoint, whose Config (its id) is read from
	// tracefs when it is opened.
	Tracepoint string
	// TraceFormat is the tracepoint's format file, read from tracefs with its id
	// (ResolveEvent): its samples carry their raw data (PERF_SAMPLE_RAW), and the format
	// says what fields it holds (package tracefmt).
	TraceFormat []byte
	// Probe is a kprobe or uprobe event, opened through the kernel's kprobe or uprobe PMU
	// (its Type, and its Config the return-probe bit, once resolved).
	Probe *Probe
}

// Probe is a kprobe's or uprobe's target, as -e names it.
type Probe struct {
	User   bool // a uprobe (else a kprobe)
	Return bool // kretprobe, uretprobe: the function's returns
	// Func is the kernel function (kprobe) or the symbol of Path (uprobe); "" for a uprobe
	// given by its file offset.
	Func string
	// Path is a uprobe's file, as given; made absolute when resolved.
	Path string
	// Offset is added to Func's address; without Func, a uprobe's file offset.
	Offset uint64
	// FileOffset is a uprobe's offset in Path, once resolved (perf_event_attr.config2).
	FileOffset uint64
	// target is what perf_event_attr.config1 points at while the event is opened: Func
	// (kprobe) or Path (uprobe), NUL-terminated; set when resolved.
	target []byte
}

// Term is one term of a pmu/.../ event: name=value, or a name alone (value 1).
type Term struct {
	Name  string
	Value uint64
}

// Hardware says whether the event counts in a hardware PMU: the machine must expose one.
func (e EventSpec) Hardware() bool {
	switch e.Type {
	case TypeHardware, TypeHWCache, TypeRaw:
		return true
	}
	return e.PMU != ""
}

// Clock says whether the event counts time (cpu-clock, task-clock: nanoseconds).
func (e EventSpec) Clock() bool {
	return e.Type == TypeSoftware && (e.Config == SWCPUClock || e.Config == SWTaskClock)
}

// IsDefault says whether the event is what stax samples without -e: cpu-clock in
// frequency mode at the recording's frequency.
func (e EventSpec) IsDefault() bool {
	return e.Type == TypeSoftware && e.Config == SWCPUClock && e.Period == 0 && e.Freq == 0
}

var softwareEvents = map[string]uint64{
	"cpu-clock":        SWCPUClock,
	"task-clock":       SWTaskClock,
	"page-faults":      SWPageFaults,
	"faults":           SWPageFaults,
	"context-switches": SWContextSwitches,
	"cs":               SWContextSwitches,
	"cpu-migrations":   SWCPUMigrations,
	"migrations":       SWCPUMigrations,
	"minor-faults":     SWMinorFaults,
	"major-faults":     SWMajorFaults,
	"alignment-faults": SWAlignmentFaults,
	"emulation-faults": SWEmulationFaults,
}

var hardwareEvents = map[string]uint64{
	"cycles":                  0,
	"cpu-cycles":              0,
	"instructions":            1,
	"cache-references":        2,
	"cache-misses":            3,
	"branch-instructions":     4,
	"branches":                4,
	"branch-misses":           5,
	"bus-cycles":              6,
	"stalled-cycles-frontend": 7,
	"stalled-cycles-backend":  8,
	"ref-cycles":              9,
}

// canonical names of the aliases.
var canonical = map[string]string{
	"faults": "page-faults", "cs": "context-switches", "migrations": "cpu-migrations",
	"cpu-cycles": "cycles", "branches": "branch-instructions",
}

// Hardware cache events: CACHE-OP-RESULT, as perf spells them (L1-dcache-load-misses).
var (
	cacheIDs = map[string]uint64{"L1-dcache": 0, "L1-icache": 1, "LLC": 2, "dTLB": 3, "iTLB": 4, "branch": 5, "node": 6}
	cacheOps = map[string]uint64{"load": 0, "loads": 0, "store": 1, "stores": 1, "prefetch": 2, "prefetches": 2}
)

// SoftwareEventNames and HardwareEventNames list the named events (canonical names), in
// the order stax list-events shows them.
var (
	SoftwareEventNames = []string{"cpu-clock", "task-clock", "page-faults", "minor-faults", "major-faults",
		"context-switches", "cpu-migrations", "alignment-faults", "emulation-faults"}
	HardwareEventNames = []string{"cycles", "instructions", "cache-references", "cache-misses", "branch-instructions",
		"branch-misses", "bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles",
		"L1-dcache-loads", "L1-dcache-load-misses", "L1-dcache-stores", "L1-icache-load-misses", "LLC-loads",
		"LLC-load-misses", "LLC-stores", "LLC-store-misses", "dTLB-loads", "dTLB-load-misses", "iTLB-load-misses",
		"branch-loads", "branch-load-misses"}
)

// Bounds on what ParseEvents takes: it parses a user's command line.
const (
	MaxEvents     = 16   // events in one list
	maxEventName  = 256  // bytes of one event
	maxProbeName  = 1024 // bytes of one uprobe event, whose path may be long
	maxEventTerms = 16   // terms of one pmu/.../ event
)

// ErrEventSyntax is wrapped by the errors of ParseEvents.
var ErrEventSyntax = errors.New("event")

// ParseEvents parses a comma-separated list of events, as stax record -e takes it (commas
// inside a pmu/.../ event belong to it). Each event appears once.
func ParseEvents(list string) ([]EventSpec, error) {
	if len(list) > MaxEvents*(maxProbeName+1) {
		return nil, fmt.Errorf("%w list of %d bytes: at most %d events", ErrEventSyntax, len(list), MaxEvents)
	}
	var out []EventSpec
	seen := map[string]bool{}
	for rest := list; ; {
		item, more, err := nextEvent(rest)
		if err != nil {
			return nil, err
		}
		ev, err := ParseEvent(item)
		if err != nil {
			return nil, err
		}
		if seen[ev.Name] {
			return nil, fmt.Errorf("%w %q is given twice", ErrEventSyntax, ev.Name)
		}
		seen[ev.Name] = true
		if out = append(out, ev); len(out) > MaxEvents {
			return nil, fmt.Errorf("%w list: at most %d events", ErrEventSyntax, MaxEvents)
		}
		if more == "" {
			return out, nil
		}
		rest = more[1:]
	}
}

// nextEvent splits the first event off list; more is what follows, from its comma. The
// slashes of a uprobe's path are its own: only a pmu/.../ event's hold commas.
func nextEvent(list string) (item, more string, err error) {
	inPMU := false
	kind, _, _ := strings.Cut(list, ":")
	isProbe := probeKinds[kind]
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '/':
			inPMU = !inPMU && !isProbe
		case ',':
			if !inPMU {
				if i+1 == len(list) {
					return "", "", fmt.Errorf("%w list %q ends with a comma", ErrEventSyntax, list)
				}
				return list[:i], list[i:], nil
			}
		}
	}
	return list, "", nil
}

// ParseEvent parses one event name.
func ParseEvent(s string) (EventSpec, error) {
	limit := maxEventName
	if strings.HasPrefix(s, "uprobe:") || strings.HasPrefix(s, "uretprobe:") {
		limit = maxProbeName
	}
	switch {
	case s == "":
		return EventSpec{}, fmt.Errorf("%w: empty name", ErrEventSyntax)
	case len(s) > limit:
		return EventSpec{}, fmt.Errorf("%w name of %d bytes: at most %d (%d for a uprobe)", ErrEventSyntax, len(s), maxEventName, maxProbeName)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return EventSpec{}, fmt.Errorf("%w %q: names are printable ASCII without spaces", ErrEventSyntax, s)
		}
	}
	if c, ok := softwareEvents[s]; ok {
		return EventSpec{Name: canonicalName(s), Type: TypeSoftware, Config: c}, nil
	}
	if c, ok := hardwareEvents[s]; ok {
		return EventSpec{Name: canonicalName(s), Type: TypeHardware, Config: c}, nil
	}
	if c, ok := cacheEvent(s); ok {
		return EventSpec{Name: s, Type: TypeHWCache, Config: c}, nil
	}
	if kind, rest, ok := strings.Cut(s, ":"); ok && probeKinds[kind] {
		return parseProbe(s, kind, rest)
	}
	if strings.Contains(s, "/") {
		return parsePMUEvent(s)
	}
	if sys, name, ok := strings.Cut(s, ":"); ok {
		if !traceIdent(sys) || !traceIdent(name) {
			return EventSpec{}, fmt.Errorf("%w %q: a tracepoint is SUBSYSTEM:NAME (letters, digits and _), as stax list-events lists them", ErrEventSyntax, s)
		}
		return EventSpec{Name: s, Type: TypeTracepoint, Tracepoint: s}, nil
	}
	if len(s) > 1 && s[0] == 'r' && len(s) <= 17 {
		if v, err := strconv.ParseUint(s[1:], 16, 64); err == nil {
			return EventSpec{Name: s, Type: TypeRaw, Config: v}, nil
		}
	}
	return EventSpec{}, fmt.Errorf("%w %q is not one stax knows: stax list-events lists them (software and hardware names, rXXXX, pmu/event=..,umask=../, sys:tracepoint, kprobe:FUNC, uprobe:PATH:SYMBOL)", ErrEventSyntax, s)
}

// probeKinds are the prefixes of the probe events.
var probeKinds = map[string]bool{"kprobe": true, "kretprobe": true, "uprobe": true, "uretprobe": true}

// ProbeSyntax is how -e spells probes, for help and errors.
const ProbeSyntax = "kprobe:FUNC[+OFFSET], kretprobe:FUNC, uprobe:PATH:SYMBOL[+OFFSET], uprobe:PATH:0xFILEOFFSET, uretprobe:PATH:SYMBOL"

// parseProbe parses a probe event, s, whose kind (kprobe, kretprobe, uprobe, uretprobe)
// is followed by rest: FUNC[+OFFSET] for a kprobe, PATH:SYMBOL[+OFFSET] or PATH:OFFSET
// (a number) for a uprobe. The path's file is read when the event is resolved.
func parseProbe(s, kind, rest string) (EventSpec, error) {
	p := &Probe{User: kind == "uprobe" || kind == "uretprobe", Return: kind == "kretprobe" || kind == "uretprobe"}
	bad := func(format string, args ...any) (EventSpec, error) {
		return EventSpec{}, fmt.Errorf("%w %q: %s", ErrEventSyntax, s, fmt.Sprintf(format, args...))
	}
	fn := rest
	if p.User {
		i := strings.LastIndexByte(rest, ':')
		if i < 0 {
			return bad("a uprobe is %s:PATH:SYMBOL[+OFFSET] or %s:PATH:0xFILEOFFSET", kind, kind)
		}
		p.Path, fn = rest[:i], rest[i+1:]
		if p.Path == "" {
			return bad("the path is empty: %s:PATH:SYMBOL", kind)
		}
		if fn == "" {
			return bad("give the symbol to probe in %s, or its file offset (0x...)", p.Path)
		}
		if c := fn[0]; c >= '0' && c <= '9' {
			off, err := strconv.ParseUint(fn, 0, 64)
			if err != nil {
				return bad("%q is not a file offset (decimal, or hex as 0x1139)", fn)
			}
			p.Offset = off
			return EventSpec{Name: s, Probe: p}, nil
		}
	}
	if f, off, ok := strings.Cut(fn, "+"); ok {
		v, err := strconv.ParseUint(off, 0, 64)
		if err != nil {
			return bad("%q is not an offset (decimal, or hex as 0x10)", off)
		}
		if p.Return {
			return bad("a return probe is at a function's entry: %s:%s, without +%s", kind, strings.TrimSuffix(rest, "+"+off), off)
		}
		fn, p.Offset = f, v
	}
	if !symbolIdent(fn) {
		if p.User {
			return bad("%q is not a symbol name (letters, digits, _ . $ @): %s:PATH:SYMBOL[+OFFSET]", fn, kind)
		}
		return bad("%q is not a kernel function's name (letters, digits, _ and .; /proc/kallsyms lists them): %s:FUNC[+OFFSET]", fn, kind)
	}
	p.Func = fn
	return EventSpec{Name: s, Probe: p}, nil
}

// symbolIdent says whether s can be a function's symbol: C's and C++'s mangled names, and
// the compilers' suffixes (foo.isra.0, foo.cold).
func symbolIdent(s string) bool {
	if s == "" || len(s) > 512 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '$' || c == '@') {
			return false
		}
	}
	return s[0] < '0' || s[0] > '9'
}

func canonicalName(s string) string {
	if c, ok := canonical[s]; ok {
		return c
	}
	return s
}

// cacheEvent parses CACHE-OP-RESULT: L1-dcache-loads (accesses), L1-dcache-load-misses.
func cacheEvent(s string) (uint64, bool) {
	for cache, id := range cacheIDs {
		rest, ok := strings.CutPrefix(s, cache+"-")
		if !ok {
			continue
		}
		op, result, _ := strings.Cut(rest, "-")
		o, ok := cacheOps[op]
		if !ok {
			return 0, false
		}
		switch {
		case result == "" && strings.HasSuffix(op, "s"): // L1-dcache-loads: accesses
			return id | o<<8, true
		case result == "misses" && !strings.HasSuffix(op, "s"):
			return id | o<<8 | 1<<16, true
		}
		return 0, false
	}
	return 0, false
}

func traceIdent(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parsePMUEvent parses pmu/term=value,term,.../: the terms are resolved against the
// PMU's sysfs format files when the event is opened (ResolvePMU).
func parsePMUEvent(s string) (EventSpec, error) {
	pmu, rest, _ := strings.Cut(s, "/")
	body, ok := strings.CutSuffix(rest, "/")
	if !ok || strings.Contains(body, "/") || pmu == "" {
		return EventSpec{}, fmt.Errorf("%w %q: a PMU event is PMU/term=value,.../ (cpu/event=0x3c,umask=0x00/)", ErrEventSyntax, s)
	}
	if !pmuIdent(pmu) {
		return EventSpec{}, fmt.Errorf("%w %q: %q is not a PMU name (letters, digits, _ and -)", ErrEventSyntax, s, pmu)
	}
	ev := EventSpec{Name: s, PMU: pmu}
	if body == "" {
		return EventSpec{}, fmt.Errorf("%w %q: give the event's terms between the slashes", ErrEventSyntax, s)
	}
	for _, t := range strings.Split(body, ",") {
		name, val, hasVal := strings.Cut(t, "=")
		if !pmuIdent(name) {
			return EventSpec{}, fmt.Errorf("%w %q: term %q is not name=value", ErrEventSyntax, s, t)
		}
		term := Term{Name: name, Value: 1}
		if hasVal {
			v, err := strconv.ParseUint(val, 0, 64)
			if err != nil {
				return EventSpec{}, fmt.Errorf("%w %q: term %s: %q is not a number (decimal, or hex as 0x3c)", ErrEventSyntax, s, name, val)
			}
			term.Value = v
		}
		if ev.Terms = append(ev.Terms, term); len(ev.Terms) > maxEventTerms {
			return EventSpec{}, fmt.Errorf("%w %q: at most %d terms", ErrEventSyntax, s, maxEventTerms)
		}
	}
	return ev, nil
}

func pmuIdent(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// FormatField is where a PMU format term goes: bit ranges of config, config1 or config2,
// as a sysfs format file says ("config:0-7,21", "config1:0-63").
type FormatField struct {
	Word   int // 0: config, 1: config1, 2: config2
	Ranges [][2]int
}

// ParseFormat parses a sysfs PMU format file's content.
func ParseFormat(s string) (FormatField, error) {
	s = strings.TrimSpace(s)
	word, bits, ok := strings.Cut(s, ":")
	if !ok || len(s) > 256 {
		return FormatField{}, fmt.Errorf("format %q: not config:BITS", s)
	}
	var f FormatField
	switch word {
	case "config":
	case "config1":
		f.Word = 1
	case "config2":
		f.Word = 2
	default:
		return FormatField{}, fmt.Errorf("format %q: %q is not config, config1 or config2", s, word)
	}
	for _, r := range strings.Split(bits, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b > 63 {
			return FormatField{}, fmt.Errorf("format %q: bad bit range %q", s, r)
		}
		if f.Ranges = append(f.Ranges, [2]int{a, b}); len(f.Ranges) > 64 {
			return FormatField{}, fmt.Errorf("format %q: too many ranges", s)
		}
	}
	return f, nil
}

// Apply places v in the field's bits of words (config, config1, config2); false when v
// does not fit.
func (f FormatField) Apply(words *[3]uint64, v uint64) bool {
	for _, r := range f.Ranges {
		n := r[1] - r[0] + 1
		var part uint64
		if n == 64 {
			part = v
			v = 0
		} else {
			part = v & (1<<n - 1)
			v >>= n
		}
		words[f.Word] |= part << r[0]
	}
	return v == 0
}

// ApplyTerms sets ev's config words from its terms with the PMU's format fields.
func (ev *EventSpec) ApplyTerms(formats map[string]FormatField) error {
	var w [3]uint64
	for _, t := range ev.Terms {
		f, ok := formats[t.Name]
		if !ok {
			return fmt.Errorf("%w %q: the PMU %s has no term %q", ErrEventSyntax, ev.Name, ev.PMU, t.Name)
		}
		if !f.Apply(&w, t.Value) {
			return fmt.Errorf("%w %q: %s=%#x does not fit its bits", ErrEventSyntax, ev.Name, t.Name, t.Value)
		}
	}
	ev.Config, ev.Config1, ev.Config2 = w[0], w[1], w[2]
	return nil
}

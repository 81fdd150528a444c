package push

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/stax-profiler/stax/internal/export"
)

// Attribute keys stax sets beyond the OpenTelemetry semantic conventions' own.
const (
	// SequenceKey numbers the windows a recording pushes, from 1, so a receiver sees a
	// gap or a repeat.
	SequenceKey = "stax.push.sequence"
	buildIDKey  = "process.executable.build_id.gnu"
)

// Resource describes what was profiled, as OpenTelemetry resource attributes.
type Resource struct {
	Host    string // host.name
	Service string // service.name
	Exe     string // process.executable.path; empty: several processes
	Pid     int    // process.pid; 0: several processes
}

// EncodeOTLP encodes a pprof profile as an OTLP/HTTP profiles export request (protobuf): the
// request message is Profiles' own.
func EncodeOTLP(p *profile.Profile, res Resource, seq uint64) ([]byte, error) {
	return EncodeOTLPValues(p, export.PprofValues{}, res, seq)
}

// EncodeOTLPValues is EncodeOTLP of a profile whose values vals says are whose
// (export.PprofWithValues): see ProfilesOf.
func EncodeOTLPValues(p *profile.Profile, vals export.PprofValues, res Resource, seq uint64) ([]byte, error) {
	return (&pprofile.ProtoMarshaler{}).MarshalProfiles(ProfilesOf(p, vals, res, seq))
}

// Profiles converts a pprof profile to OTLP profiles: its functions, inline frames,
// mappings (with their build-ids), locations and stacks go to the shared dictionary; each
// sample keeps its count and its process.pid, thread.id and thread.name labels.
func Profiles(p *profile.Profile, res Resource, seq uint64) pprofile.Profiles {
	return ProfilesOf(p, export.PprofValues{}, res, seq)
}

// ProfilesOf is Profiles of a profile whose values vals says are whose. An OTLP profile
// has one sample type: a run of several events gets a profile per event, of its samples
// (those labelled with it), and the counters read with the samples a profile each. An
// event whose value is CPU time (cpu/nanoseconds: cpu-clock, and task-clock or cycles when
// first) has sample type samples/count, each sample's number of samples, and period type
// cpu/nanoseconds; the others have the type of their pprof value (page-faults/count,
// task-clock/nanoseconds), each sample's events, the period the same type. A counter's
// profile has the type of its value and no period.
func ProfilesOf(p *profile.Profile, vals export.PprofValues, res Resource, seq uint64) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	e := newEncoder(pd.Dictionary())

	rp := pd.ResourceProfiles().AppendEmpty()
	ra := rp.Resource().Attributes()
	putStr(ra, "host.name", res.Host)
	putStr(ra, "service.name", res.Service)
	putStr(ra, "process.executable.path", res.Exe)
	if res.Pid != 0 {
		ra.PutInt("process.pid", int64(res.Pid))
	}
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("stax")
	multi := len(vals.Events) > 1
	if !multi {
		// One event: every sample is its, counted.
		period := p.Period
		pt := p.PeriodType
		e.profile(sp, p, seq, "samples", "count", pt, period, func(s *profile.Sample) int64 { return s.Value[0] })
	}
	for k, col := range vals.Events {
		if !multi || col >= len(p.SampleType) || k >= len(vals.EventNames) {
			break
		}
		name, vt := vals.EventNames[k], p.SampleType[col]
		var period int64
		if k < len(vals.Periods) {
			period = vals.Periods[k]
		}
		of := func(s *profile.Sample) bool {
			l := s.Label["event"]
			return len(l) == 1 && l[0] == name
		}
		if vt.Type == "cpu" && vt.Unit == "nanoseconds" {
			e.profile(sp, p, seq, "samples", "count", vt, period, func(s *profile.Sample) int64 {
				if !of(s) {
					return 0
				}
				return s.Value[0]
			})
			continue
		}
		e.profile(sp, p, seq, vt.Type, vt.Unit, vt, period, func(s *profile.Sample) int64 {
			if !of(s) {
				return 0
			}
			return s.Value[col]
		})
	}
	for _, col := range vals.Counters {
		if col >= len(p.SampleType) {
			continue
		}
		vt := p.SampleType[col]
		e.profile(sp, p, seq, vt.Type, vt.Unit, nil, 0, func(s *profile.Sample) int64 { return s.Value[col] })
	}
	return pd
}

// profile adds to sp a profile of sample type typ/unit, with the samples of p whose value
// (by value) is not 0.
func (e *encoder) profile(sp pprofile.ScopeProfiles, p *profile.Profile, seq uint64, typ, unit string, pt *profile.ValueType, period int64, value func(*profile.Sample) int64) {
	out := sp.Profiles().AppendEmpty()
	out.SampleType().SetTypeStrindex(e.str(typ))
	out.SampleType().SetUnitStrindex(e.str(unit))
	if pt != nil {
		out.PeriodType().SetTypeStrindex(e.str(pt.Type))
		out.PeriodType().SetUnitStrindex(e.str(pt.Unit))
	}
	out.SetPeriod(period)
	out.SetTime(pcommon.Timestamp(p.TimeNanos))
	out.SetDurationNano(uint64(max(p.DurationNanos, 0)))
	var id pprofile.ProfileID
	_, _ = rand.Read(id[:])
	out.SetProfileID(id)
	out.AttributeIndices().Append(e.intAttr(SequenceKey, int64(seq)))

	samples := out.Samples()
	samples.EnsureCapacity(len(p.Sample))
	for _, s := range p.Sample {
		if len(s.Value) == 0 {
			continue
		}
		v := value(s)
		if v == 0 {
			continue
		}
		os := samples.AppendEmpty()
		os.SetStackIndex(e.stack(s.Location))
		os.Values().Append(v)
		if v := s.NumLabel["pid"]; len(v) == 1 {
			os.AttributeIndices().Append(e.intAttr("process.pid", v[0]))
		}
		if v := s.NumLabel["tid"]; len(v) == 1 {
			os.AttributeIndices().Append(e.intAttr("thread.id", v[0]))
		}
		if v := s.Label["thread"]; len(v) == 1 {
			os.AttributeIndices().Append(e.strAttr("thread.name", v[0]))
		}
	}
}

func putStr(m pcommon.Map, k, v string) {
	if v != "" {
		m.PutStr(k, v)
	}
}

// encoder fills the dictionary, each entry once. Every table starts with its zero entry,
// as OTLP requires (index 0 means "none").
type encoder struct {
	d         pprofile.ProfilesDictionary
	strs      map[string]int32
	attrs     map[string]int32
	mappings  map[*profile.Mapping]int32
	functions map[*profile.Function]int32
	locations map[*profile.Location]int32
	stacks    map[string]int32
	key       []byte
}

func newEncoder(d pprofile.ProfilesDictionary) *encoder {
	e := &encoder{d: d, strs: map[string]int32{}, attrs: map[string]int32{}, mappings: map[*profile.Mapping]int32{},
		functions: map[*profile.Function]int32{}, locations: map[*profile.Location]int32{}, stacks: map[string]int32{}}
	e.str("")
	d.MappingTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
	return e
}

func (e *encoder) str(s string) int32 {
	if i, ok := e.strs[s]; ok {
		return i
	}
	i := int32(e.d.StringTable().Len())
	e.d.StringTable().Append(s)
	e.strs[s] = i
	return i
}

func (e *encoder) strAttr(k, v string) int32 {
	return e.attr("s"+k+"\x00"+v, k, func(val pcommon.Value) { val.SetStr(v) })
}

func (e *encoder) intAttr(k string, v int64) int32 {
	return e.attr("i"+k+"\x00"+strconv.FormatInt(v, 10), k, func(val pcommon.Value) { val.SetInt(v) })
}

func (e *encoder) attr(key, k string, set func(pcommon.Value)) int32 {
	if i, ok := e.attrs[key]; ok {
		return i
	}
	i := int32(e.d.AttributeTable().Len())
	a := e.d.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(e.str(k))
	set(a.Value())
	e.attrs[key] = i
	return i
}

func (e *encoder) mapping(m *profile.Mapping) int32 {
	if m == nil {
		return 0
	}
	if i, ok := e.mappings[m]; ok {
		return i
	}
	i := int32(e.d.MappingTable().Len())
	om := e.d.MappingTable().AppendEmpty()
	om.SetMemoryStart(m.Start)
	om.SetMemoryLimit(m.Limit)
	om.SetFileOffset(m.Offset)
	om.SetFilenameStrindex(e.str(m.File))
	if isHex(m.BuildID) {
		om.AttributeIndices().Append(e.strAttr(buildIDKey, m.BuildID))
	}
	e.mappings[m] = i
	return i
}

func isHex(s string) bool {
	if s == "" || len(s)%2 != 0 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func (e *encoder) function(f *profile.Function) int32 {
	if i, ok := e.functions[f]; ok {
		return i
	}
	i := int32(e.d.FunctionTable().Len())
	of := e.d.FunctionTable().AppendEmpty()
	of.SetNameStrindex(e.str(f.Name))
	of.SetSystemNameStrindex(e.str(f.SystemName))
	of.SetFilenameStrindex(e.str(f.Filename))
	of.SetStartLine(f.StartLine)
	e.functions[f] = i
	return i
}

func (e *encoder) location(l *profile.Location) int32 {
	if i, ok := e.locations[l]; ok {
		return i
	}
	i := int32(e.d.LocationTable().Len())
	ol := e.d.LocationTable().AppendEmpty()
	ol.SetMappingIndex(e.mapping(l.Mapping))
	ol.SetAddress(l.Address)
	for _, ln := range l.Line {
		if ln.Function == nil {
			continue
		}
		line := ol.Lines().AppendEmpty()
		line.SetFunctionIndex(e.function(ln.Function))
		line.SetLine(ln.Line)
		line.SetColumn(ln.Column)
	}
	e.locations[l] = i
	return i
}

// stack interns a stack of locations, leaf first (pprof's order and OTLP's).
func (e *encoder) stack(locs []*profile.Location) int32 {
	e.key = e.key[:0]
	ids := make([]int32, len(locs))
	for j, l := range locs {
		ids[j] = e.location(l)
		e.key = strconv.AppendInt(e.key, int64(ids[j]), 36)
		e.key = append(e.key, ',')
	}
	if i, ok := e.stacks[string(e.key)]; ok {
		return i
	}
	i := int32(e.d.StackTable().Len())
	e.d.StackTable().AppendEmpty().LocationIndices().Append(ids...)
	e.stacks[string(e.key)] = i
	return i
}

package recorder

import (
	"encoding/hex"

	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/record"
	"github.com/stax-profiler/stax/internal/resolve"
	"github.com/stax-profiler/stax/internal/unwind"
)

// dwarfUnwinder turns a sample's registers and user-stack copy into a full user stack with
// the images' call-frame information. It runs on the ingest goroutine (an Unwinder is not
// safe for concurrent use); tables are loaded once per image.
type dwarfUnwinder struct {
	u      unwind.Unwinder
	loader unwind.FileLoader
	view   trackerView
	buf    []uint64
	chain  []uint64
	// maxStack is kernel.perf_event_max_stack: a callchain this long was cut.
	maxStack int
}

// jitUnwindInfo gives the unwinder the .eh_frame a JIT announced for its code (jitdump
// CODE_UNWINDING_INFO), laid out as perf lays it: right after the code, 8-byte aligned.
type jitUnwindInfo struct{ res *resolve.Resolver }

func (j jitUnwindInfo) JITUnwindInfo(pid uint32, addr, t uint64) ([]byte, uint64, bool) {
	jt := j.res.JITIfAny(pid)
	if jt == nil {
		return nil, 0, false
	}
	f, ok := jt.Lookup(addr, t)
	if !ok || len(f.Unwind) == 0 {
		return nil, 0, false
	}
	return f.Unwind, f.Start + (f.Size+7)&^7, true
}

// maxUnwoundFrames bounds a user stack unwound from its copy.
const maxUnwoundFrames = 1024

// trackerView is a process's mappings at a sample's time, from the tracker.
type trackerView struct {
	tr     *proc.Tracker
	pid    int
	time   uint64
	loader *unwind.FileLoader
}

func (v *trackerView) Mapping(addr uint64) (unwind.Mapping, bool) {
	m := v.tr.Find(v.pid, addr, v.time)
	if m == nil {
		return unwind.Mapping{}, false
	}
	// The tracker holds executable mappings only (perf reports no data mappings here).
	return unwind.Mapping{Start: m.Start, End: m.End, Offset: m.Pgoff, Path: m.Path,
		BuildID: hex.EncodeToString(m.BuildID), Exec: true}, true
}

func (v *trackerView) Table(m unwind.Mapping) *unwind.Table {
	pm := proc.Mapping{Path: m.Path}
	if pm.Anonymous() && m.Path != "[vdso]" {
		return nil // JIT code: no file to read call-frame information from
	}
	return v.loader.Table(m)
}

// chainOf returns s's callchain with the user part unwound from its registers and stack
// copy: the kernel's part as it is, then the user frames. Without registers (a kernel
// thread, a sample the kernel could not copy) the kernel's chain is used as it is.
func (d *dwarfUnwinder) chainOf(tr *proc.Tracker, s *record.Sample, fallback []uint64) []uint64 {
	if len(s.Regs) < 3 || s.RegsABI == 0 {
		return fallback
	}
	kernel, user := record.SplitCallchain(s.Callchain)
	if cap(d.buf) == 0 {
		d.buf = make([]uint64, 0, maxUnwoundFrames) // the unwinder stops when it is full
	}
	d.view = trackerView{tr: tr, pid: int(s.Pid), time: s.Time, loader: &d.loader}
	pcs, end := d.u.Unwind(&d.view, &unwind.Sample{Pid: s.Pid, Time: s.Time,
		Regs:  unwind.Regs{BP: s.Regs[0], SP: s.Regs[1], IP: s.Regs[2]},
		Stack: s.Stack, FPChain: user, FPChainCut: d.maxStack > 0 && len(kernel)+len(user) >= d.maxStack}, d.buf[:0])
	d.buf = pcs
	d.chain = d.chain[:0]
	if len(kernel) > 0 {
		d.chain = append(append(d.chain, record.ContextKernel), kernel...)
	}
	d.chain = append(append(d.chain, record.ContextUser), pcs...)
	if end == unwind.EndTruncated || end == unwind.EndMaxDepth {
		d.chain = append(d.chain, record.TruncatedMark)
	}
	return d.chain
}

// fpStacks checks frame-pointer callchains: the garbage a walk reads above the last real
// frame (a non-canonical address, or one in no executable mapping) is dropped, a stack the
// kernel cut at its depth limit gets a [truncated] root, and how each stack ended is counted.
type fpStacks struct {
	maxStack int // kernel.perf_event_max_stack: a chain this long was cut
	view     trackerView
	chain    []uint64
	ends     unwind.Counts
	// usable remembers pages found in an executable mapping, per process and address
	// space generation (a page stays usable until a mapping is replaced or removed, which
	// changes the generation): most return addresses are checked without the tracker.
	usable [4096]usablePage
}

type usablePage struct {
	pid, gen uint32
	page     uint64 // page number + 1; 0: empty
}

// garbageAt is the index of the first address of chain that is non-canonical or in no
// executable mapping of the sample's process, or len(chain).
func (f *fpStacks) garbageAt(tr *proc.Tracker, s *record.Sample, chain []uint64) int {
	gen := uint32(0)
	genKnown := false
	for i, pc := range chain {
		if pc == 0 || pc > maxUserAddress {
			return i
		}
		page := pc>>12 + 1
		slot := &f.usable[(page^uint64(s.Pid)*0x9e3779b1)&uint64(len(f.usable)-1)]
		if !genKnown {
			gen, genKnown = tr.Generation(int(s.Pid), s.Time), true
		}
		if slot.page == page && slot.pid == s.Pid && slot.gen == gen {
			continue
		}
		if _, ok := f.view.Mapping(pc); !ok {
			return i
		}
		*slot = usablePage{pid: s.Pid, gen: gen, page: page}
	}
	return len(chain)
}

// maxUserAddress is the highest user-space address on x86-64 (47-bit address space).
const maxUserAddress = 0x00007fffffffffff

// check returns chain as it should be counted; the leaf (where the sample was taken)
// always stays.
func (f *fpStacks) check(tr *proc.Tracker, s *record.Sample, chain []uint64) []uint64 {
	kernel, user := record.SplitCallchain(chain)
	if len(user) <= 1 {
		if len(user) == 1 {
			f.ends[unwind.EndComplete].Add(1)
		}
		return chain
	}
	f.view = trackerView{tr: tr, pid: int(s.Pid), time: s.Time}
	kept, end := user[1:], unwind.EndComplete
	if n := f.garbageAt(tr, s, kept); n < len(kept) {
		kept, end = kept[:n], unwind.EndGarbage
	}
	cut := f.maxStack > 0 && len(kernel)+len(user) >= f.maxStack
	if end == unwind.EndComplete && cut {
		end = unwind.EndMaxDepth
	}
	f.ends[end].Add(1)
	if end == unwind.EndComplete {
		return chain
	}
	f.chain = f.chain[:0]
	if len(kernel) > 0 {
		f.chain = append(append(f.chain, record.ContextKernel), kernel...)
	}
	f.chain = append(append(append(f.chain, record.ContextUser), user[0]), kept...)
	if end == unwind.EndMaxDepth {
		f.chain = append(f.chain, record.TruncatedMark)
	}
	return f.chain
}

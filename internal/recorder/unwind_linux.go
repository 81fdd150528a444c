package recorder

import (
	"bytes"
	"encoding/hex"
	"os"
	"slices"
	"strconv"

	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/resolve"
	"github.com/stax-profiler/stax/internal/targetfile"
	"github.com/stax-profiler/stax/internal/unwind"
)

// dwarfUnwinder turns a sample's registers and user-stack copy into a full user stack with
// the images' call-frame information. Each stackWorker has its own (an Unwinder is not safe
// for concurrent use); they share the loader, so tables are loaded once per image.
type dwarfUnwinder struct {
	u      unwind.Unwinder
	loader *unwind.FileLoader
	view   trackerView
	cache  viewCache
	buf    []uint64
	chain  []uint64
	// maxStack is kernel.perf_event_max_stack: a callchain this long was cut.
	maxStack int
	// unwound says the last chainOf unwound the sample's copy, and end how that walk ended.
	unwound bool
	end     unwind.EndReason
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
	c      *viewCache // nil: no caching
}

// Mapping returns the mapping that held addr at the sample's time: an address the process
// had not mapped yet, or no longer had (exec replaced its program), is in none.
func (v *trackerView) Mapping(addr uint64) (unwind.Mapping, bool) {
	if v.c != nil {
		if m, ok := v.c.mapping(v.pid, addr, v.time); ok {
			return m, true
		}
	}
	m := v.tr.FindLive(v.pid, addr, v.time)
	if m == nil {
		return unwind.Mapping{}, false
	}
	// The tracker holds executable mappings only (perf reports no data mappings here).
	um := unwind.Mapping{Start: m.Start, End: m.End, Offset: m.Pgoff, Path: m.Path, Ino: m.Ino, Exec: true}
	if v.c != nil {
		um.BuildID = v.c.hex(m.BuildID)
		v.c.addMapping(v.pid, m.Time, m.EndTime, um)
	} else {
		um.BuildID = hex.EncodeToString(m.BuildID)
	}
	return um, true
}

func (v *trackerView) Table(m unwind.Mapping) *unwind.Table {
	if proc.CodeOf(m.Path) == proc.CodeJIT {
		return nil // no file describes it: the JIT's own unwinding info does, if any
	}
	if v.c == nil {
		return v.loader.TableOf(v.pid, m)
	}
	return v.c.table(v.loader, v.pid, m)
}

// ReadCode reads the process's code at addr from its memory (unwind.CodeReader): the
// unwinder recognises CPython's perf trampolines by it.
func (v *trackerView) ReadCode(m unwind.Mapping, addr uint64, b []byte) bool {
	f, err := targetfile.Open("/proc/" + strconv.Itoa(v.pid) + "/mem")
	if err != nil {
		return false
	}
	defer f.Close()
	n, _ := f.ReadAt(b, int64(addr))
	return n == len(b)
}

// openImage opens the file behind an unwinder's mapping as process pid maps it, refusing
// one whose build-id or inode is not the mapping's (proc.OpenImage).
func openImage(pid int, m unwind.Mapping) (*os.File, error) {
	id, _ := hex.DecodeString(m.BuildID)
	return proc.OpenImage(pid, &proc.Mapping{Start: m.Start, End: m.End, Pgoff: m.Offset, Path: m.Path, BuildID: id, Ino: m.Ino})
}

// viewCache is one stack worker's memory of the mappings, images and build-ids its last
// frames used: a stack's frames come from a handful of images, and each frame asks for its
// mapping and its image's table. Asking the tracker and the loader every time would also
// make the workers contend for their locks.
type viewCache struct {
	maps    [8]cachedMapping
	nextMap int
	tables  [4]cachedTable
	nextTab int
	rawIDs  [4][]byte
	hexIDs  [4]string
	nextID  int
}

// cachedMapping is a mapping of pid over its life [from, until) (until 0: still mapped).
type cachedMapping struct {
	pid         int
	from, until uint64
	m           unwind.Mapping
}

type cachedTable struct {
	buildID, path string
	ino           uint64
	t             *unwind.Table
	ok            bool
}

// reset forgets the mappings. The tracker does not change while a batch is unwound (the
// goroutine that applies its records waits for the workers), but it does between batches: a
// mapping can be cut or ended by a later record.
func (c *viewCache) reset() {
	c.maps = [8]cachedMapping{}
}

// mapping returns the mapping that holds addr at time t, if one seen in this batch did. At
// most one mapping of a process holds an address at a time: the tracker cuts what a new
// mapping overlaps.
func (c *viewCache) mapping(pid int, addr, t uint64) (unwind.Mapping, bool) {
	for i := range c.maps {
		e := &c.maps[i]
		if e.pid == pid && e.m.End != 0 && addr >= e.m.Start && addr < e.m.End && e.from <= t && (e.until == 0 || t < e.until) {
			return e.m, true
		}
	}
	return unwind.Mapping{}, false
}

func (c *viewCache) addMapping(pid int, from, until uint64, m unwind.Mapping) {
	c.maps[c.nextMap] = cachedMapping{pid: pid, from: from, until: until, m: m}
	c.nextMap = (c.nextMap + 1) % len(c.maps)
}

// table returns the loader's table for m's image; tables never change once loaded.
func (c *viewCache) table(l *unwind.FileLoader, pid int, m unwind.Mapping) *unwind.Table {
	for i := range c.tables {
		e := &c.tables[i]
		if e.ok && e.buildID == m.BuildID && (m.BuildID != "" || e.path == m.Path && e.ino == m.Ino) {
			return e.t
		}
	}
	t := l.TableOf(pid, m)
	c.tables[c.nextTab] = cachedTable{buildID: m.BuildID, path: m.Path, ino: m.Ino, t: t, ok: true}
	c.nextTab = (c.nextTab + 1) % len(c.tables)
	return t
}

// hex returns a build-id's hex form, made once per image.
func (c *viewCache) hex(id []byte) string {
	for i := range c.rawIDs {
		if c.rawIDs[i] != nil && bytes.Equal(c.rawIDs[i], id) {
			return c.hexIDs[i]
		}
	}
	i := c.nextID
	c.nextID = (c.nextID + 1) % len(c.rawIDs)
	c.rawIDs[i] = append(c.rawIDs[i][:0], id...)
	c.hexIDs[i] = hex.EncodeToString(id)
	return c.hexIDs[i]
}

// chainOf returns s's callchain with the user part unwound from its registers and stack
// copy: the kernel's part as it is, then the user frames. Without registers (a kernel
// thread, a sample the kernel could not copy) the kernel's chain is used as it is.
func (d *dwarfUnwinder) chainOf(tr *proc.Tracker, s *perfrecord.Sample, fallback []uint64, fpEnd unwind.EndReason) []uint64 {
	d.unwound = false
	if len(s.Regs) < 3 || s.RegsABI == 0 {
		return fallback
	}
	kernel, user := perfrecord.SplitCallchain(s.Callchain)
	if cap(d.buf) == 0 {
		d.buf = make([]uint64, 0, maxUnwoundFrames) // the unwinder stops when it is full
	}
	d.view = trackerView{tr: tr, pid: int(s.Pid), time: s.Time, loader: d.loader, c: &d.cache}
	pcs, end := d.u.Unwind(&d.view, &unwind.Sample{Pid: s.Pid, Time: s.Time,
		Regs:  unwind.Regs{BP: s.Regs[0], SP: s.Regs[1], IP: s.Regs[2]},
		Stack: s.Stack, FPChain: user, FPChainEnd: chainEnd(fpEnd, d.maxStack, kernel, user),
		InKernel: inKernel(s)}, d.buf[:0])
	d.buf = pcs
	d.unwound, d.end = true, end
	d.chain = d.chain[:0]
	if len(pcs) == 0 {
		// No user frames (the registers were another program's, exec replacing it): the
		// kernel's frames are the stack.
		switch {
		case len(kernel) > 0:
			d.chain = append(append(d.chain, perfrecord.ContextKernel), kernel...)
		case inKernel(s):
			d.chain = append(d.chain, perfrecord.ContextKernel, s.IP)
		default:
			d.chain = append(d.chain, perfrecord.ContextUser)
		}
		return d.chain
	}
	if len(kernel) > 0 {
		d.chain = append(append(d.chain, perfrecord.ContextKernel), kernel...)
	}
	d.chain = append(append(d.chain, perfrecord.ContextUser), pcs...)
	if end == unwind.EndTruncated || end == unwind.EndMaxDepth {
		d.chain = append(d.chain, perfrecord.TruncatedMark)
	}
	return d.chain
}

// leafFrames is how many frames leafFixed walks by call-frame information at most.
const leafFrames = 8

// leafFixed returns chain, a frame-pointer callchain, with the frames it skipped above
// the sampled function put back. A function that has not pushed a frame pointer (libc's
// syscall wrappers) leaves its caller's in the register, so the chain's second frame is
// its caller's caller: a few steps by call-frame information, until the walk meets the
// chain's second frame, find the frames between.
func (d *dwarfUnwinder) leafFixed(tr *proc.Tracker, s *perfrecord.Sample, chain []uint64) []uint64 {
	if len(s.Regs) < 3 || s.RegsABI == 0 || len(s.Stack) == 0 {
		return chain
	}
	u := -1
	for i, a := range chain {
		if a == perfrecord.ContextUser {
			u = i
			break
		}
	}
	if u < 0 || len(chain) < u+3 || chain[u+1] != s.Regs[2] {
		return chain // no caller in the chain, or a chain that does not start at the registers
	}
	d.view = trackerView{tr: tr, pid: int(s.Pid), time: s.Time, loader: d.loader, c: &d.cache}
	if cap(d.buf) < leafFrames {
		d.buf = make([]uint64, 0, maxUnwoundFrames)
	}
	pcs := d.u.LeafFrames(&d.view, &unwind.Sample{Pid: s.Pid, Time: s.Time,
		Regs: unwind.Regs{BP: s.Regs[0], SP: s.Regs[1], IP: s.Regs[2]}, Stack: s.Stack, InKernel: inKernel(s)}, d.buf[:0:leafFrames])
	next := chain[u+2]
	j := slices.Index(pcs, next)
	if j <= 1 {
		return chain // the chain skipped nothing, or the walk never met it
	}
	d.chain = append(append(append(d.chain[:0], chain[:u+2]...), pcs[1:j]...), chain[u+2:]...)
	return d.chain
}

// fpStacks checks frame-pointer callchains: the garbage a walk reads above the last real
// frame (a non-canonical address, or one in no executable mapping) is dropped, a stack the
// kernel cut at its depth limit gets a [truncated] root, and how each stack ended is counted.
type fpStacks struct {
	maxStack int // kernel.perf_event_max_stack: a chain this long was cut
	view     trackerView
	cache    viewCache
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
func (f *fpStacks) garbageAt(tr *proc.Tracker, s *perfrecord.Sample, chain []uint64) int {
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

// inKernel reports whether s was taken in the kernel: its user registers, and the user part
// of its callchain, are where the thread entered the kernel.
func inKernel(s *perfrecord.Sample) bool {
	return s.Misc&perfrecord.MiscCPUModeMask == perfrecord.MiscKernel
}

// check returns chain as it should be counted. The user leaf must lie in a mapping the
// process had at the sample's time: one taken in the kernel while exec replaced the
// program carries the old program's registers, and loses its user frames; one taken in
// user mode keeps its leaf (the sample was taken there), alone. Either way the stack ends
// as EndUnmapped, as with DWARF.
func (f *fpStacks) check(tr *proc.Tracker, s *perfrecord.Sample, chain []uint64, fpEnd unwind.EndReason) []uint64 {
	kernel, user := perfrecord.SplitCallchain(chain)
	if len(user) == 0 {
		return chain
	}
	f.view = trackerView{tr: tr, pid: int(s.Pid), time: s.Time, c: &f.cache}
	if f.garbageAt(tr, s, user[:1]) == 0 {
		f.ends[unwind.EndUnmapped].Add(1)
		f.chain = f.chain[:0]
		if len(kernel) > 0 {
			f.chain = append(append(f.chain, perfrecord.ContextKernel), kernel...)
		}
		if !inKernel(s) || len(kernel) == 0 {
			f.chain = append(f.chain, perfrecord.ContextUser, user[0])
		}
		return f.chain
	}
	if len(user) == 1 {
		f.ends[unwind.EndComplete].Add(1)
		return chain
	}
	kept, end := user[1:], unwind.EndComplete
	if n := f.garbageAt(tr, s, kept); n < len(kept) {
		kept, end = kept[:n], unwind.EndGarbage
	}
	if len(s.Stack) > 0 && len(s.Regs) >= 3 && s.RegsABI != 0 {
		// A DWARF-mode sample taken while the recorder was behind: its stack copy shows
		// where a saved frame pointer went round, as the unwinder would have found.
		regs := unwind.Regs{BP: s.Regs[0], SP: s.Regs[1], IP: s.Regs[2]}
		if n := unwind.FPLoopAt(user, regs, s.Stack) - 1; n < len(kept) {
			kept, end = kept[:n], unwind.EndLoop
		}
	}
	if end == unwind.EndComplete {
		end = chainEnd(fpEnd, f.maxStack, kernel, user)
	}
	f.ends[end].Add(1)
	if end == unwind.EndComplete {
		return chain
	}
	f.chain = f.chain[:0]
	if len(kernel) > 0 {
		f.chain = append(append(f.chain, perfrecord.ContextKernel), kernel...)
	}
	f.chain = append(append(append(f.chain, perfrecord.ContextUser), user[0]), kept...)
	if end == unwind.EndMaxDepth || end == unwind.EndTruncated {
		f.chain = append(f.chain, perfrecord.TruncatedMark)
	}
	return f.chain
}

// chainEnd is why a frame-pointer chain ends short of the outermost frame: end, as its
// walk in a stack copy said (userChainFromCopy), else EndMaxDepth where the kernel's chain
// has maxStack entries (kernel.perf_event_max_stack: it was cut), else EndComplete.
func chainEnd(end unwind.EndReason, maxStack int, kernel, user []uint64) unwind.EndReason {
	if end == unwind.EndComplete && maxStack > 0 && len(kernel)+len(user) >= maxStack {
		return unwind.EndMaxDepth
	}
	return end
}

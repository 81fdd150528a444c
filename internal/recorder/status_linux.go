// What a live run answers: its status, a snapshot for queries, waits, and the notes that
// explain unnamed frames.

package recorder

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// Snapshot resolves what is pending and returns the run as it stands.
func (r *Recorder) Snapshot() *store.Run {
	r.run.Resolve(r.res)
	r.collectCode()
	return r.snapshot(false, nil)
}

// Counts is the run's meta with its counts as they stand (samples, lost, off-CPU), without
// the profiles a Snapshot builds: what a summary line needs.
func (r *Recorder) Counts() store.Meta {
	r.mu.Lock()
	meta := r.meta
	meta.Lost = r.lost
	meta.ForeignSamples = r.in.foreign.Load()
	r.mu.Unlock()
	meta.Samples = r.run.Stats().Samples
	meta.Events = r.eventsMeta()
	meta.Counters, meta.CountersByDefault = r.ctr.meta(r.opts.Counters), r.opts.CountersByDefault
	meta.OffCPU = r.offCPUMeta()
	r.fileCounts(&meta)
	return meta
}

// maxFileNotes bounds the notes naming refused and abandoned files.
const maxFileNotes = 16

// fileCounts sets meta's counts of the programs' files refused and abandoned since the
// recording started, and returns the notes that name them.
func (r *Recorder) fileCounts(meta *store.Meta) []string {
	refused, abandoned := targetfile.Counts()
	meta.FilesRefused = refused - r.filesBase[0]
	meta.FilesAbandoned = abandoned - r.filesBase[1]
	if meta.FilesRefused == 0 && meta.FilesAbandoned == 0 {
		return nil
	}
	return targetfile.Notes(maxFileNotes)
}

// comm is a process's name, for notes.
func (r *Recorder) comm(pid int) string {
	for _, p := range r.tracker.Processes() {
		if p.Pid == pid {
			return p.Comm
		}
	}
	return ""
}

// unnamedJITNotes says, per process with samples in JIT code no source names yet, why that
// may be and what to do.
func unnamedJITNotes(run *store.Run, comm func(int) string) []string {
	p := &run.Profile
	unnamed := map[uint32]uint64{}
	for _, e := range p.Entries {
		if leaf, ok := p.LeafFrame(e.Stack); ok {
			if f := p.Frames[leaf]; f.Kind == agg.KindJIT && strings.HasPrefix(f.Func, "[unknown]") {
				unnamed[e.Pid] += e.Count
			}
		}
	}
	pids := make([]uint32, 0, len(unnamed))
	for pid := range unnamed {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var notes []string
	for _, pid := range pids {
		var dump, emptyMap, anyMap, failed string
		for _, s := range run.JIT {
			if s.Pid != int(pid) || strings.HasPrefix(s.Error, jit.ErrStale.Error()) {
				continue // another process's file (its "jit:" line says so)
			}
			switch {
			case s.Error != "" && s.Functions == 0:
				failed = s.Error
			case s.Kind == "jitdump":
				dump = s.Path
			case s.Functions == 0:
				emptyMap = s.Path
			default:
				anyMap = s.Path
			}
		}
		who := fmt.Sprintf("pid %d", pid)
		if c := comm(int(pid)); c != "" {
			who += " (" + c + ")"
		}
		why := "no jitdump or perf map names it yet: runtimes that write their perf map at exit (JVM " +
			"DumpPerfMapAtExit, Mono --jitmap) are named then; others need their option (node --perf-prof " +
			"or --perf-basic-prof, PHP opcache.jit_debug=0x10)"
		switch {
		case failed != "":
			why = "its JIT file could not be read: " + failed
		case emptyMap != "" && dump == "" && anyMap == "":
			why = "its perf map " + emptyMap + " is empty: some runtimes write it only at exit " +
				"(Mono --jitmap, JVM DumpPerfMapAtExit), and the names will appear then"
		case dump != "":
			why = "its jitdump " + dump + " has not announced this code yet: runtimes buffer what they " +
				"write (V8 in 2 MiB blocks), and the names appear when they write it or exit"
		case anyMap != "":
			why = "its perf map " + anyMap + " has no line for this code yet"
		default:
			if h := jitRuntimeHint(run, pid); h != "" {
				why = h
			}
		}
		notes = append(notes, fmt.Sprintf("%s: %d samples in JIT code with no name; %s", who, unnamed[pid], why))
	}
	return notes
}

// symbolNotes says which symbol sources failed, so unnamed frames have a reason.
func (r *Recorder) symbolNotes() []string {
	var notes []string
	if err := r.res.KernelError(); err != nil {
		notes = append(notes, "kernel frames are unnamed: "+err.Error())
	}
	errs := r.res.ImageErrors()
	paths := make([]string, 0, len(errs))
	for p := range errs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		notes = append(notes, "no symbols for "+p+": "+errs[p])
	}
	return append(notes, r.res.GoInlineNotes()...)
}

// SetPushStatus makes Status report pushing through f; call it before serving queries.
func (r *Recorder) SetPushStatus(f func() *api.PushStatus) { r.pushStatus = f }

// Status describes the live run.
func (r *Recorder) Status() api.Status {
	run := r.Snapshot()
	st := api.StatusOf(run)
	st.Live, st.State = true, api.StateLive
	select {
	case <-r.doneCh:
		st.Live, st.State = false, api.StateStored
	default:
	}
	st.ElapsedSec = time.Since(r.start).Seconds()
	if r.pushStatus != nil {
		st.Push = r.pushStatus()
	}
	for _, p := range r.tracker.Processes() {
		st.Processes = append(st.Processes, api.ProcessStatus{Pid: p.Pid, PPid: p.PPid, Comm: p.Comm, Exited: p.ExitTime != 0})
	}
	st.Bounds = r.bounds()
	return st
}

// Wait blocks until cond holds, the run ends, or ctx ends.
func (r *Recorder) Wait(ctx context.Context, cond api.WaitCondition) api.Wait {
	out := api.Wait{Schema: api.Schema, Run: r.id}
	for {
		r.mu.Lock()
		tick := r.tick
		names := r.frameNames
		r.mu.Unlock()
		samples := r.run.Samples()
		elapsed := time.Since(r.start).Seconds()
		out.Samples, out.ElapsedSec = samples, elapsed
		met := true
		if cond.Samples > 0 && samples < cond.Samples {
			met = false
		}
		if cond.Seconds > 0 && elapsed < cond.Seconds {
			met = false
		}
		if cond.Symbol != "" && !containsFold(names, cond.Symbol) {
			met = false
		}
		if met {
			out.Outcome = api.WaitMet
			return out
		}
		select {
		case <-r.doneCh:
			// One last look: the final resolve may have met the condition.
			r.mu.Lock()
			names = r.frameNames
			r.mu.Unlock()
			samples = r.run.Samples()
			out.Samples = samples
			if (cond.Samples == 0 || samples >= cond.Samples) && cond.Seconds == 0 &&
				(cond.Symbol == "" || containsFold(names, cond.Symbol)) {
				out.Outcome = api.WaitMet
			} else {
				out.Outcome = api.WaitEnded
			}
			return out
		case <-ctx.Done():
			out.Outcome = api.WaitTimeout
			return out
		case <-tick:
		}
	}
}

func containsFold(names []string, s string) bool {
	s = strings.ToLower(s)
	for _, n := range names {
		if strings.Contains(strings.ToLower(n), s) {
			return true
		}
	}
	return false
}

// cpythonNotes names, per process whose stacks run CPython's interpreter loop with no perf
// map or jitdump of its own, the option that names its Python functions: CPython 3.12+
// writes them only when started with perf support.
func cpythonNotes(run *store.Run, comm func(int) string) []string {
	p := &run.Profile
	hasJIT := map[int]bool{}
	for _, s := range run.JIT {
		hasJIT[s.Pid] = true
	}
	eval := map[uint32]uint64{} // samples in the interpreter loop, per process
	images := map[uint32]string{}
	var buf []uint32
	for _, e := range p.Entries {
		if hasJIT[int(e.Pid)] {
			continue
		}
		buf = p.AppendFrames(buf[:0], e.Stack)
		for _, fid := range buf {
			if f := &p.Frames[fid]; f.Func == "_PyEval_EvalFrameDefault" && cpythonMinor(f.Image) >= 0 {
				eval[e.Pid] += e.Count
				images[e.Pid] = f.Image
				break
			}
		}
	}
	pids := make([]uint32, 0, len(eval))
	for pid := range eval {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var notes []string
	for _, pid := range pids {
		who := fmt.Sprintf("pid %d", pid)
		if c := comm(int(pid)); c != "" {
			who += " (" + c + ")"
		}
		img := images[pid]
		if cpythonMinor(img) < 12 {
			notes = append(notes, fmt.Sprintf("%s: %d samples in CPython's interpreter (%s), which names no Python function for profilers before 3.12 "+
				"(3.12+ does, started with `python -X perf`)", who, eval[pid], img))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s: %d samples in CPython's interpreter (%s) with no perf map or jitdump: its Python functions "+
			"are unnamed; start it with `python -X perf` (3.12+) or `-X perf_jit` (3.13+), or PYTHONPERFSUPPORT=1", who, eval[pid], img))
	}
	return notes
}

// cpythonMinor returns N of an image named libpython3.N... or python3.N (a CPython 3
// interpreter), or -1.
func cpythonMinor(image string) int {
	base := image[strings.LastIndexByte(image, '/')+1:]
	base = strings.TrimPrefix(base, "lib")
	rest, ok := strings.CutPrefix(base, "python3.")
	if !ok {
		return -1
	}
	n := 0
	digits := 0
	for digits < len(rest) && digits < 3 && rest[digits] >= '0' && rest[digits] <= '9' {
		n = n*10 + int(rest[digits]-'0')
		digits++
	}
	if digits == 0 {
		return -1
	}
	return n
}

package views

import (
	"cmp"
	"slices"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
)

// WakerStack is a stack a waker woke a thread from.
type WakerStack struct {
	Frames []string `json:"frames"`                  // its functions, leaf first
	Kernel int      `json:"kernel_frames,omitempty"` // how many of the first are the kernel's
	Count  uint64   `json:"count"`
	Ns     uint64   `json:"ns"` // the time off CPU its wakeups ended
}

// WakerRow is a thread that woke another: how often, the time off CPU it ended, and from
// which stacks (most time first).
type WakerRow struct {
	Wakee     uint32       `json:"wakee_tid"`
	WakeeName string       `json:"wakee_name"`
	Waker     uint32       `json:"waker_tid"`
	WakerPid  uint32       `json:"waker_pid"`
	WakerName string       `json:"waker_name"`
	Count     uint64       `json:"count"`
	Ns        uint64       `json:"ns"`
	Stacks    []WakerStack `json:"stacks"`
}

// Wakers lists who woke whom from ns and n (the wakers' profiles; n may be nil), of thread
// wakee alone when it is not 0, most time first, with each pair's first stacks (at most
// stacks of them).
func Wakers(ns, n *agg.Profile, wakee uint32, stacks int) []WakerRow {
	names := map[uint32]string{}
	for _, t := range ns.Threads {
		names[t.Tid] = t.Name
	}
	type pair struct{ wakee, waker uint32 }
	type stackKey struct {
		waker uint32
		key   string
	}
	counts := map[stackKey]uint64{}
	if n != nil {
		fs := n.FuncStacks()
		for _, e := range n.Entries {
			if int(e.Stack) < len(fs) {
				_, k := wakerStack(n, fs[e.Stack])
				counts[stackKey{e.Tid, k}] += e.Count
			}
		}
	}
	rows := map[pair]*WakerRow{}
	fs := ns.FuncStacks()
	for _, e := range ns.Entries {
		if int(e.Stack) >= len(fs) || len(fs[e.Stack]) == 0 {
			continue
		}
		st := fs[e.Stack]
		w, ok := agg.ParseWakeeFunc(ns.Frames[st[0]].Func)
		if !ok || (wakee != 0 && w != wakee) {
			continue
		}
		frames, k := wakerStack(ns, st[1:])
		p := pair{w, e.Tid}
		row := rows[p]
		if row == nil {
			row = &WakerRow{Wakee: w, WakeeName: names[w], Waker: e.Tid, WakerPid: e.Pid, WakerName: names[e.Tid]}
			rows[p] = row
		}
		c := counts[stackKey{e.Tid, wakeeKey(w, k)}]
		row.Ns += e.Count
		row.Count += c
		i := slices.IndexFunc(row.Stacks, func(s WakerStack) bool { return slices.Equal(s.Frames, frames) })
		if i < 0 {
			kern := 0
			for _, f := range st[1:] {
				if int(f) >= len(ns.Frames) || ns.Frames[f].Kind != agg.KindKernel {
					break
				}
				kern++
			}
			row.Stacks = append(row.Stacks, WakerStack{Frames: frames, Kernel: kern})
			i = len(row.Stacks) - 1
		}
		row.Stacks[i].Ns += e.Count
		row.Stacks[i].Count += c
	}
	out := make([]WakerRow, 0, len(rows))
	for _, r := range rows {
		slices.SortFunc(r.Stacks, func(a, b WakerStack) int {
			if c := cmp.Compare(b.Ns, a.Ns); c != 0 {
				return c
			}
			return slices.Compare(a.Frames, b.Frames)
		})
		if stacks > 0 && len(r.Stacks) > stacks {
			r.Stacks = r.Stacks[:stacks]
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b WakerRow) int {
		if c := cmp.Compare(b.Ns, a.Ns); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Wakee, b.Wakee); c != 0 {
			return c
		}
		return cmp.Compare(a.Waker, b.Waker)
	})
	return out
}

// wakerStack is the function names of frame ids st, and a key of the whole stack
// (wakee frame included when st has it).
func wakerStack(p *agg.Profile, st []uint32) ([]string, string) {
	frames := make([]string, 0, len(st))
	for _, f := range st {
		if int(f) < len(p.Frames) {
			frames = append(frames, p.Frames[f].Func)
		}
	}
	return frames, strings.Join(frames, "\x00")
}

// wakeeKey is the key wakerStack gives a stack led by wakee's frame.
func wakeeKey(wakee uint32, rest string) string {
	if rest == "" {
		return agg.WakeeFunc(wakee)
	}
	return agg.WakeeFunc(wakee) + "\x00" + rest
}

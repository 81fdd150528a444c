package recorder

import "slices"

// newThreadFollower is a Source that can take every wait's stack of the threads started
// from now (*perfevent.Session): while the stacks are sampled, a new thread's first waits
// would have no stack of their own, nor a sampled one of its own to stand for them.
type newThreadFollower interface {
	FollowNewThreads(tids []int, above int) error
	StopNewThreads()
	ForgetStoppedThreads(readTo uint64)
}

// offFollowNewThreads follows, from when the stacks are sampled (on), the waits of the
// threads started since, each with its stack; from when every stack is taken again, no
// longer.
func (r *Recorder) offFollowNewThreads(on bool) {
	f, ok := r.src.(newThreadFollower)
	if !ok || !r.off.waitStacks {
		return
	}
	if !on {
		f.StopNewThreads()
		return
	}
	tids := r.targetThreads()
	if len(tids) == 0 {
		return
	}
	if err := f.FollowNewThreads(tids, slices.Max(tids)); err != nil {
		r.note("the first waits of threads started while stacks are sampled have no stack of their own: %v", err)
	}
}

// forgetStoppedFollowers lets the source forget the events offFollowNewThreads stopped once
// the step has read every record they took: on the ingest goroutine, between steps.
func (r *Recorder) forgetStoppedFollowers() {
	if f, ok := r.src.(newThreadFollower); ok && r.off.waitStacks && !r.in.stepFinal {
		f.ForgetStoppedThreads(r.in.stepCut)
	}
}

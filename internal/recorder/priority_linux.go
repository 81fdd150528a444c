package recorder

import (
	"os"
	"strconv"
	"syscall"
)

// priorityBoost is how much nicer than its own start the recorder's threads run, where the
// kernel allows it (root, CAP_SYS_NICE, or an RLIMIT_NICE that reaches it), and never
// beyond -20. From nice 0 that is -20: a weight 87 times a nice-0 thread's. 200 busy
// threads on 2 CPUs at 10 kHz need a fifth of a CPU from the recorder; 5 levels (a weight of
// 3) left it some 3% of one among the 100 threads of its CPU, and it lost 0-12% of the
// samples, a different share each run. At -20 it lost 0-0.3%. It takes only what the
// samples need: it sleeps whenever the rings are empty.
const priorityBoost = 20

// raisePriority runs the recorder's threads priorityBoost nice levels above where the
// process started; the ingest stage calls it the first time the rings fill past half. A
// target with more busy threads than cores leaves the recorder its fair share of one thread
// among hundreds, too little to empty the rings, and samples were lost at random; raised,
// it runs when the rings need it. It stays raised for the rest of the run: what starved it
// once will again. It is not raised from the start, as then each of its wakeups would
// preempt the target's threads, at a cost to targets that never starve it. Threads the
// runtime starts later inherit the level from the thread that starts them; the launched
// target, started long before, keeps its own. It reports the nice level set, and false
// where the kernel refused it.
func raisePriority() (int, bool) {
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0, false
	}
	want := 20 - raw - priorityBoost // getpriority gives 20 - nice
	if want < -20 {
		want = -20
	}
	done := map[int]bool{}
	for pass := 0; pass < 3; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return 0, false
		}
		changed := false
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, want); err != nil {
				if len(done) == 0 {
					return 0, false // not allowed: nothing changed
				}
				continue // the thread ended
			}
			done[tid], changed = true, true
		}
		if !changed {
			break
		}
	}
	return want, true
}

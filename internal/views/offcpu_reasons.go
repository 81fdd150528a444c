package views

import (
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
)

// Off-CPU reasons: why a thread was off CPU, read from the stack it was switched out with.
const (
	ReasonLock       = "lock"
	ReasonCond       = "cond"
	ReasonSem        = "sem"
	ReasonSleep      = "sleep"
	ReasonIORead     = "io-read"
	ReasonIOWrite    = "io-write"
	ReasonPoll       = "poll"
	ReasonConnect    = "net-connect"
	ReasonAccept     = "net-accept"
	ReasonChild      = "child"    // waiting for a child process to change state (wait4, waitid)
	ReasonRunnable   = "runnable" // preempted: the thread could run, and waited for a CPU
	ReasonOther      = "other"
	reasonKernelOnly = 1 // a rule that matches kernel frames only
	reasonGeneric    = 2 // a rule that a more specific one anywhere in the stack overrides
)

// Reasons lists every reason, in the order of their indexes in StackReasons.
var Reasons = []string{ReasonLock, ReasonCond, ReasonSem, ReasonSleep, ReasonIORead, ReasonIOWrite,
	ReasonPoll, ReasonConnect, ReasonAccept, ReasonRunnable, ReasonOther, ReasonOnCPU, ReasonChild}

// ReasonRule names the functions whose presence in a blocked stack gives its reason. A name
// matches a function whose name, without leading underscores, a "GI_" or "libc_" prefix and
// an "@version" or compiler clone suffix (".constprop.0", ".isra.0", ".part.0", ".cold"), equals it, or starts with it when it ends in "*". User-space rules
// (libc, the Go runtime and syscall package) are tried first, from the leaf up; kernel ones
// (the wait site, when kernel stacks are recorded) after; generic rules (a futex, which
// every lock, condition and semaphore waits on) only when nothing more specific matched.
type ReasonRule struct {
	Reason  string
	Kernel  bool // matches kernel frames (else user frames)
	Generic bool
	// Overrides: a rule (of user frames) that wins over every other anywhere in the
	// stack, for a wait site that blocks through another kind of wait.
	Overrides bool
	Names     []string
}

// ReasonRules is the table docs/off-cpu.md describes.
var ReasonRules = []ReasonRule{
	{Reason: ReasonLock, Names: []string{"pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
		"lll_lock_wait", "lll_lock_wait_private", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
		"pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock", "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock",
		"mtx_lock", "mtx_timedlock", "flockfile", "runtime.lock2", "sync.(*Mutex).Lock", "sync.(*RWMutex).Lock", "sync.(*RWMutex).RLock"}},
	// HotSpot's monitor contention (a synchronized block or method another thread holds)
	// parks on a condition variable nearer the leaf, which alone would read "cond".
	{Reason: ReasonLock, Overrides: true, Names: []string{"ObjectMonitor::enter*", "ObjectMonitor::EnterI*",
		"ObjectMonitor::ReenterI*", "ObjectSynchronizer::enter*", "ObjectSynchronizer::inflate_and_enter*"}},
	{Reason: ReasonCond, Names: []string{"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
		"pthread_barrier_wait", "pthread_join", "pthread_clockjoin_np", "pthread_clockjoin_ex", "pthread_timedjoin_np", "cnd_wait", "cnd_timedwait",
		"runtime.notesleep", "runtime.notetsleep", "runtime.notetsleepg", "sync.(*Cond).Wait", "sync.(*WaitGroup).Wait"}},
	{Reason: ReasonSem, Names: []string{"sem_wait", "sem_timedwait", "sem_clockwait", "new_sem_wait*", "old_sem_wait", "semop", "semtimedop", "runtime.semasleep"}},
	{Reason: ReasonSleep, Names: []string{"nanosleep", "clock_nanosleep", "usleep", "sleep", "thrd_sleep",
		"runtime.usleep", "time.Sleep", "runtime.timeSleep"}},
	{Reason: ReasonIORead, Names: []string{"read", "read_nocancel", "pread", "pread64", "readv", "preadv", "preadv2",
		"recv", "recvfrom", "recvmsg", "recvmmsg", "fread", "fgets", "getline", "getdelim",
		"syscall.read", "syscall.Read", "syscall.pread", "internal/poll.(*FD).Read", "internal/poll.(*FD).Pread"}},
	{Reason: ReasonIOWrite, Names: []string{"write", "write_nocancel", "pwrite", "pwrite64", "writev", "pwritev", "pwritev2",
		"send", "sendto", "sendmsg", "sendmmsg", "fwrite", "fflush", "fsync", "fdatasync", "sync_file_range",
		"syscall.write", "syscall.Write", "internal/poll.(*FD).Write", "internal/poll.(*FD).Fsync"}},
	{Reason: ReasonPoll, Names: []string{"poll", "ppoll", "epoll_wait", "epoll_pwait", "epoll_pwait2", "select",
		"pselect", "pselect6", "runtime.netpoll", "runtime.epollwait"}},
	{Reason: ReasonConnect, Names: []string{"connect", "syscall.connect", "syscall.Connect"}},
	{Reason: ReasonAccept, Names: []string{"accept", "accept4", "syscall.accept", "syscall.accept4", "syscall.Accept", "syscall.Accept4"}},
	{Reason: ReasonChild, Names: []string{"wait", "waitpid", "wait3", "wait4", "waitid", "syscall.wait4", "syscall.Wait4"}},

	// Kernel wait sites.
	{Reason: ReasonLock, Kernel: true, Names: []string{"rwsem_down_read_slowpath", "rwsem_down_write_slowpath",
		"__mutex_lock*", "mutex_lock*", "down_read*", "down_write*"}},
	{Reason: ReasonSleep, Kernel: true, Names: []string{"do_nanosleep", "hrtimer_nanosleep", "common_nsleep", "__x64_sys_nanosleep",
		"__x64_sys_clock_nanosleep"}},
	{Reason: ReasonIORead, Kernel: true, Names: []string{"pipe_read", "ksys_read", "vfs_read", "do_iter_readv_writev",
		"ksys_pread64", "__x64_sys_read", "__x64_sys_pread64", "__x64_sys_readv", "tcp_recvmsg", "unix_stream_recvmsg",
		"unix_dgram_recvmsg", "sock_recvmsg", "__sys_recvfrom", "__sys_recvmsg", "n_tty_read", "filemap_fault", "do_page_fault"}},
	{Reason: ReasonIOWrite, Kernel: true, Names: []string{"pipe_write", "ksys_write", "vfs_write", "ksys_pwrite64",
		"__x64_sys_write", "__x64_sys_pwrite64", "__x64_sys_writev", "tcp_sendmsg", "unix_stream_sendmsg", "sock_sendmsg",
		"__sys_sendto", "__sys_sendmsg", "vfs_fsync_range", "__x64_sys_fsync", "__x64_sys_fdatasync"}},
	{Reason: ReasonPoll, Kernel: true, Names: []string{"do_sys_poll", "do_epoll_wait", "ep_poll", "do_select", "core_sys_select",
		"__x64_sys_poll", "__x64_sys_ppoll", "__x64_sys_epoll_wait", "__x64_sys_epoll_pwait", "__x64_sys_select", "__x64_sys_pselect6"}},
	{Reason: ReasonConnect, Kernel: true, Names: []string{"__sys_connect", "inet_stream_connect", "__inet_stream_connect", "unix_stream_connect"}},
	{Reason: ReasonAccept, Kernel: true, Names: []string{"__sys_accept4", "do_accept", "inet_csk_accept", "unix_accept"}},
	{Reason: ReasonSem, Kernel: true, Names: []string{"do_semtimedop", "__x64_sys_semop", "__x64_sys_semtimedop"}},
	{Reason: ReasonChild, Kernel: true, Names: []string{"do_wait", "kernel_wait4", "kernel_waitid", "__do_sys_wait4",
		"__x64_sys_wait4", "__x64_sys_waitid"}},

	// What every wait in user space may end in.
	{Reason: ReasonLock, Generic: true, Names: []string{"futex_wait", "futex_abstimed_wait*", "futex_lock_pi*", "syscall",
		"runtime.futex", "runtime.futexsleep"}},
	{Reason: ReasonLock, Kernel: true, Generic: true, Names: []string{"futex_wait*", "__x64_sys_futex", "do_futex", "futex_q_lock"}},
}

// normalReasonName strips what libc's internal names add to a function's.
func normalReasonName(s string) string {
	if i := strings.IndexByte(s, '@'); i > 0 {
		s = s[:i]
	}
	for _, suffix := range []string{".constprop", ".isra", ".part", ".cold"} { // the compiler's clones
		if i := strings.Index(s, suffix); i > 0 {
			s = s[:i]
		}
	}
	for {
		t := strings.TrimLeft(s, "_")
		t = strings.TrimPrefix(t, "GI_")
		t = strings.TrimPrefix(t, "libc_")
		if t == s {
			return s
		}
		s = t
	}
}

// reasonMatcher indexes ReasonRules.
type reasonMatcher struct {
	exact  [5]map[string]uint8 // by kernel<<1|generic, or overrideClass: name -> reason index
	prefix [5][]reasonPrefix
}

// overrideClass is the rules that override the others' class (ReasonRule.Overrides).
const overrideClass = 4

type reasonPrefix struct {
	p      string
	reason uint8
}

func newReasonMatcher() *reasonMatcher {
	m := &reasonMatcher{}
	for i := range m.exact {
		m.exact[i] = map[string]uint8{}
	}
	for _, r := range ReasonRules {
		class := 0
		if r.Kernel {
			class |= 2
		}
		if r.Generic {
			class |= 1
		}
		if r.Overrides {
			class = overrideClass
		}
		idx := uint8(reasonIndex(r.Reason))
		for _, n := range r.Names {
			if p, ok := strings.CutSuffix(n, "*"); ok {
				m.prefix[class] = append(m.prefix[class], reasonPrefix{normalReasonName(p), idx})
			} else if _, dup := m.exact[class][normalReasonName(n)]; !dup {
				m.exact[class][normalReasonName(n)] = idx
			}
		}
	}
	return m
}

func reasonIndex(r string) int {
	for i, x := range Reasons {
		if x == r {
			return i
		}
	}
	return reasonIndex(ReasonOther)
}

func (m *reasonMatcher) match(class int, name string) (uint8, bool) {
	if r, ok := m.exact[class][name]; ok {
		return r, true
	}
	for _, p := range m.prefix[class] {
		if strings.HasPrefix(name, p.p) {
			return p.reason, true
		}
	}
	return 0, false
}

// StackReasons gives each of p's stacks (see Profile.Stacks) its off-CPU reason, an index
// into Reasons. p must be by function (not a view by line, address or image).
func StackReasons(p *agg.Profile) []uint8 {
	m := newReasonMatcher()
	fst := p.FuncStacks()
	// Each frame's match, per rule class, computed once: -1 none, else the reason.
	memo := make([][5]int16, len(p.Frames))
	for i, f := range p.Frames {
		name := normalReasonName(f.Func)
		for c := range 5 {
			memo[i][c] = -1
			if kernel := c&2 != 0 && c != overrideClass; kernel != (f.Kind == agg.KindKernel) {
				continue
			}
			if r, ok := m.match(c, name); ok {
				memo[i][c] = int16(r)
			}
		}
	}
	out := make([]uint8, len(fst))
	runnable, other := uint8(reasonIndex(ReasonRunnable)), uint8(reasonIndex(ReasonOther))
	for sid, st := range fst {
		out[sid] = other
		if len(st) > 0 && p.Frames[st[0]].Func == agg.FuncRunnable && p.Frames[st[0]].Image == agg.ImageSched {
			out[sid] = runnable
			continue
		}
		// Overriding rules, user rules, then kernel, then the generic ones; within one, the
		// leaf's first.
	classes:
		for _, c := range []int{overrideClass, 0, 2, 1, 3} {
			for _, f := range st {
				if r := memo[f][c]; r >= 0 {
					out[sid] = uint8(r)
					break classes
				}
			}
		}
	}
	return out
}

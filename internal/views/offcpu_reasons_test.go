package views

import (
	"os"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
)

func TestStackReasons(t *testing.T) {
	u := func(name string) agg.Frame { return agg.Frame{Func: name, Image: "libc.so.6", Kind: agg.KindUser} }
	k := func(name string) agg.Frame { return agg.Frame{Func: name, Image: "[kernel]", Kind: agg.KindKernel} }
	stacks := []struct {
		want   string
		frames []agg.Frame // leaf first
	}{
		{ReasonLock, []agg.Frame{k("schedule"), k("futex_wait_queue"), k("futex_wait"), u("__GI___lll_lock_wait"), u("___pthread_mutex_lock"), u("wait_for_lock"), u("main")}},
		{ReasonCond, []agg.Frame{k("futex_wait"), u("__futex_abstimed_wait_common64"), u("___pthread_cond_wait"), u("main")}},
		{ReasonSem, []agg.Frame{u("do_futex_wait"), u("__new_sem_wait_slow64"), u("sem_wait@@GLIBC_2.34"), u("main")}},
		{ReasonSem, []agg.Frame{k("futex_wait"), u("__futex_abstimed_wait_common"), u("__new_sem_wait_slow64.constprop.0"), u("filler")}},
		{ReasonCond, []agg.Frame{k("futex_wait"), u("__futex_abstimed_wait_common"), u("__pthread_clockjoin_ex"), u("main")}},
		{ReasonSleep, []agg.Frame{k("do_nanosleep"), u("__GI___clock_nanosleep"), u("__GI___nanosleep"), u("usleep"), u("nap")}},
		{ReasonIORead, []agg.Frame{k("pipe_read"), k("vfs_read"), u("__GI___libc_read"), u("read_pipe")}},
		{ReasonIOWrite, []agg.Frame{u("__libc_write"), u("main")}},
		{ReasonPoll, []agg.Frame{k("do_epoll_wait"), u("epoll_wait"), u("main")}},
		{ReasonConnect, []agg.Frame{u("__libc_connect"), u("main")}},
		{ReasonAccept, []agg.Frame{u("accept4"), u("main")}},
		{ReasonRunnable, []agg.Frame{{Func: agg.FuncRunnable, Image: agg.ImageSched, Kind: agg.KindUnknown}, k("schedule"), u("spin"), u("main")}},
		{ReasonOther, []agg.Frame{k("schedule"), u("main")}},
		{ReasonSleep, []agg.Frame{k("do_nanosleep"), k("hrtimer_nanosleep"), u("[unknown] 0x1234")}}, // kernel site alone
		{ReasonLock, []agg.Frame{k("futex_wait"), u("syscall"), u("main")}},                          // a futex alone: generic
		{ReasonOther, []agg.Frame{{Func: agg.FuncNoStack, Image: agg.ImageSched, Kind: agg.KindUnknown}}},
		{ReasonLock, []agg.Frame{u("runtime.futex"), u("runtime.lock2"), u("runtime.main")}},
		{ReasonIORead, []agg.Frame{u("syscall.Syscall"), u("syscall.read"), u("internal/poll.(*FD).Read")}},
		{ReasonOther, []agg.Frame{u("readdir"), u("mysleep"), u("main")}}, // near names are not names
		{ReasonChild, []agg.Frame{k("do_wait"), k("kernel_wait4"), u("__GI___wait4"), u("waitpid"), u("main")}},
		{ReasonChild, []agg.Frame{k("do_wait"), k("kernel_waitid"), k("__x64_sys_waitid"), u("[unknown] 0x1234")}},
		{ReasonChild, []agg.Frame{u("syscall.Syscall6"), u("syscall.wait4"), u("syscall.Wait4"), u("os.(*Process).pidWait")}},
		// HotSpot's monitor enter parks on a condition variable: the monitor is the reason.
		{ReasonLock, []agg.Frame{k("futex_wait"), u("__futex_abstimed_wait_common"), u("___pthread_cond_wait"),
			u("PlatformEvent::park()"), u("ObjectMonitor::EnterI(JavaThread*)"), u("ObjectMonitor::enter(JavaThread*)"),
			u("ObjectSynchronizer::enter(Handle, BasicLock*, JavaThread*)"), u("Interpreter")}},
		{ReasonCond, []agg.Frame{k("futex_wait"), u("___pthread_cond_wait"), u("PlatformEvent::park()"), u("ObjectMonitor::wait(long, bool, JavaThread*)")}},
	}
	tab := agg.NewFrameTable()
	p := &agg.Profile{}
	for _, s := range stacks {
		var ids []uint32
		for _, f := range s.frames {
			ids = append(ids, tab.Intern(f))
		}
		p.FrameStacks = append(p.FrameStacks, ids)
		p.Stacks = append(p.Stacks, ids)
	}
	p.Frames = tab.Frames
	got := StackReasons(p)
	for i, s := range stacks {
		if Reasons[got[i]] != s.want {
			t.Errorf("stack %d (%s...): reason %s, want %s", i, s.frames[0].Func, Reasons[got[i]], s.want)
		}
	}
}

// TestReasonsDocumented checks that docs/off-cpu.md lists every name of the table.
func TestReasonsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/off-cpu.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, r := range ReasonRules {
		for _, n := range r.Names {
			if !strings.Contains(doc, "`"+n+"`") {
				t.Errorf("docs/off-cpu.md does not list %s (%s)", n, r.Reason)
			}
		}
	}
	for _, r := range Reasons {
		if !strings.Contains(doc, "`"+r+"`") {
			t.Errorf("docs/off-cpu.md does not describe the reason %s", r)
		}
	}
}

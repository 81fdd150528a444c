package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestStatStartTime(t *testing.T) {
	line := []byte("42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 98765 1000 10 18446744073709551615")
	if v, err := statStartTime(line); err != nil || v != 98765 {
		t.Errorf("statStartTime = %d, %v; want 98765", v, err)
	}
	for _, bad := range []string{"", "42 (a", "42 (a) S 1 2", "42 (a) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 x"} {
		if _, err := statStartTime([]byte(bad)); err == nil {
			t.Errorf("statStartTime(%q) took it", bad)
		}
	}
}

// A process started just now is younger than this test's own process, and than a second.
func TestAge(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer cmd.Process.Kill()
	young, err := Age(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	old, err := Age(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if young > time.Second || young > old+10*time.Millisecond {
		t.Errorf("a new process is %v old, this one %v", young, old)
	}
	if _, err := Age(1 << 30); err == nil {
		t.Error("the age of a process that does not exist")
	}
}

// The watch ends when the process exits, not before; stop ends a watch early.
func TestExitWatch(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	exited, stop, err := ExitWatch(cmd.Process.Pid)
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	defer stop()
	select {
	case <-exited:
		t.Fatal("the watch ended while the process runs")
	case <-time.After(100 * time.Millisecond):
	}
	cmd.Process.Kill() // a zombie until waited for: it has exited
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("no word of the exit in 10 s")
	}
	cmd.Wait()

	other := exec.Command("sleep", "10")
	if err := other.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	exited, stop, err = ExitWatch(other.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not end the watch")
	}
}

// Package launch starts a command stopped before its first instruction, so that perf
// events can be opened on its pid before it runs.
//
// The command is started traced (PTRACE_TRACEME), so the kernel stops it right after its
// exec; releasing it detaches. Nothing runs in the command's process before its exec
// but the fork, so its CPU time and context switches are its own, as under perf record.
//
// Where tracing is refused (Yama's ptrace_scope 2 or 3, a seccomp filter), or would strip
// the program of the privileges its setuid bit or file capabilities grant, the command is
// started behind a gate instead: stax itself, re-executed with a marker argument, waits for
// one byte on a pipe, then execs the command, and events opened with enable_on_exec start
// exactly at that exec. The gate costs the command the start of a Go runtime (about 25 ms
// of CPU time, and its threads' context switches), which its resource usage then includes.
package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/targetfile"
)

const gateArg = "__stax_gate__"

// The events are opened on the gate's main thread, and only the thread that calls exec
// survives it: if the Go scheduler ran the gate's goroutine on another thread (one created
// before the events were opened, so without them), the command would run unprofiled.
// Locking the main goroutine to the main thread from init keeps exec on the thread that
// carries the events.
func init() {
	if len(os.Args) >= 3 && os.Args[1] == gateArg {
		runtime.LockOSThread()
	}
}

// Gate is a started, not yet released, command.
type Gate struct {
	cmd *exec.Cmd
	// release, for a command behind a gate, lets it exec.
	release *os.File
	// tracer, for a traced command, is the goroutine (locked to the thread that started
	// the command, its tracer) that detaches it (true) or kills it (false).
	tracer chan bool
	done   chan error
}

// Start starts argv (argv[0] is looked up in PATH) stopped before its first instruction:
// traced where the kernel allows it, else behind a gate (Traced says which). env is the
// command's environment. stdio is passed through.
func Start(argv []string, env []string) (*Gate, error) {
	path, err := check(argv)
	if err != nil {
		return nil, err
	}
	if !privileged(path) {
		g, err := startTraced(path, argv, env)
		if err == nil {
			return g, nil
		}
		if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.ENOSYS) {
			return nil, fmt.Errorf("start %s: %w", argv[0], err)
		}
	}
	return startGate(path, argv, env)
}

// StartGate starts argv behind a gate, whatever the kernel allows.
func StartGate(argv []string, env []string) (*Gate, error) {
	path, err := check(argv)
	if err != nil {
		return nil, err
	}
	return startGate(path, argv, env)
}

// Traced reports whether the command was started traced: it has executed already, and is
// stopped at its first instruction. Otherwise it waits at the gate, which execs it when
// released.
func (g *Gate) Traced() bool { return g.tracer != nil }

// privileged reports whether the program at path gains privileges at exec that a traced
// exec would not give it (setuid, setgid, or file capabilities), for a user without root.
func privileged(path string) bool {
	if os.Geteuid() == 0 {
		return false
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return false
	}
	if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return true
	}
	n, err := unix.Getxattr(path, "security.capability", nil)
	return err == nil && n > 0
}

// startTraced starts the command with PTRACE_TRACEME and waits for the stop that follows
// its exec. Only the thread that forked it may detach it, so one goroutine, locked to its
// thread, starts it and later detaches or kills it.
func startTraced(path string, argv []string, env []string) (*Gate, error) {
	g := &Gate{tracer: make(chan bool), done: make(chan error, 1)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(path)
		cmd.Args = argv
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		pid := cmd.Process.Pid
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				cmd.Process.Kill()
				started <- fmt.Errorf("wait for exec: %w", err)
				return
			}
			break
		}
		if !ws.Stopped() {
			// It ended before it ran a single instruction: killed by a signal sent to the
			// group, most likely. Its status is gone with this wait; report it as an error.
			started <- fmt.Errorf("ended before it started (%v)", ws)
			return
		}
		g.cmd = cmd
		started <- nil
		if <-g.tracer {
			g.done <- syscall.PtraceDetach(pid)
			return
		}
		cmd.Process.Kill()
		g.done <- nil
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return g, nil
}

// check looks up argv's program and says what keeps it from being run and profiled.
func check(argv []string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("start command: no command given")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return "", &NotExecutableError{Name: argv[0], Err: err}
		}
		return "", &NotFoundError{Name: argv[0], Err: err}
	}
	// The kernel drops an unprivileged profiler's events when the program it execs cannot be
	// read (the process becomes non-dumpable), so say so now rather than record nothing.
	if f, err := targetfile.Open(path); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return "", fmt.Errorf("cannot read %s: permission denied (the kernel lets no unprivileged profiler sample a program its user cannot read; make it readable or record as root)", argv[0])
		}
	} else {
		f.Close()
	}
	return path, nil
}

func startGate(path string, argv []string, env []string) (*Gate, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find stax executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create gate pipe: %w", err)
	}
	args := append([]string{gateArg, path}, argv...)
	cmd := exec.Command(self, args...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	r.Close()
	return &Gate{cmd: cmd, release: w}, nil
}

// NotFoundError says the command does not exist.
type NotFoundError struct {
	Name string
	Err  error
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("command not found: %s (check the name and PATH)", e.Name)
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// NotExecutableError says the command exists but may not be executed.
type NotExecutableError struct {
	Name string
	Err  error
}

func (e *NotExecutableError) Error() string {
	return fmt.Sprintf("%s is not executable: permission denied (chmod +x it, or check its mount options)", e.Name)
}

func (e *NotExecutableError) Unwrap() error { return e.Err }

// Pid is the command's pid (for a gate, the gate's, which becomes the command's at exec).
func (g *Gate) Pid() int { return g.cmd.Process.Pid }

// Release lets the command run (for a gate: exec).
func (g *Gate) Release() error {
	if g.Traced() {
		g.tracer <- true
		if err := <-g.done; err != nil {
			return fmt.Errorf("detach from %s: %w", g.cmd.Args[0], err)
		}
		return nil
	}
	_, err := g.release.Write([]byte{1})
	g.release.Close()
	if err != nil {
		return fmt.Errorf("release gate: %w", err)
	}
	return nil
}

// Abort ends the command before it runs.
func (g *Gate) Abort() {
	if g.Traced() {
		g.tracer <- false
		<-g.done
	} else {
		g.release.Close()
	}
	g.cmd.Wait()
}

// Kill ends a command whose release failed, and waits for it.
func (g *Gate) Kill() {
	g.cmd.Process.Kill()
	g.cmd.Wait()
}

// Signal passes a signal stax received on to the command, unless the command got it
// already: a terminal sends SIGINT (Ctrl-C), SIGQUIT and SIGHUP to its whole foreground
// process group, as `kill -SIG -PGID` does, so while the command shares stax's process
// group those reach it without help, and a second copy would interrupt its handler (a
// Python program's cleanup, say). SIGTERM, and anything sent once the command has left
// stax's process group, is passed on.
func (g *Gate) Signal(sig os.Signal) {
	switch sig {
	case syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP:
		if pg, err := syscall.Getpgid(g.cmd.Process.Pid); err == nil && pg == syscall.Getpgrp() {
			return
		}
	}
	g.cmd.Process.Signal(sig)
}

// Wait waits for the command and returns its exit status as a shell reports it (128+signal
// when killed).
func (g *Gate) Wait() int {
	err := g.cmd.Wait()
	st, ok := g.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		if err != nil {
			return 1
		}
		return 0
	}
	switch {
	case st.Signaled():
		return 128 + int(st.Signal())
	case st.Exited():
		return st.ExitStatus()
	}
	return 1
}

// RunGateIfRequested turns this process into the gate when it was started as one. It
// returns only when the process is not a gate.
func RunGateIfRequested() {
	if len(os.Args) < 3 || os.Args[1] != gateArg {
		return
	}
	path := os.Args[2]
	argv := os.Args[3:]
	f := os.NewFile(3, "gate")
	var b [1]byte
	if n, _ := f.Read(b[:]); n != 1 {
		os.Exit(127) // the recorder gave up before releasing us
	}
	f.Close()
	if syscall.Gettid() != os.Getpid() {
		fmt.Fprintf(os.Stderr, "stax: the gate left its main thread; the command would run unprofiled\n")
		os.Exit(127)
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "stax: exec %s: %v\n", path, err)
	os.Exit(127)
}

// Package launch starts a command stopped at a gate, so that perf events can be opened on
// its pid before it executes its first instruction.
//
// The gate is stax itself, re-executed with a marker argument: it waits for one byte on a
// pipe, then execs the command. Events opened with enable_on_exec start exactly at that exec.
package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
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
	cmd     *exec.Cmd
	release *os.File
}

// Start starts the gate for argv (argv[0] is looked up in PATH). env is the command's
// environment. stdio is passed through.
func Start(argv []string, env []string) (*Gate, error) {
	if len(argv) == 0 {
		return nil, errors.New("start command: no command given")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, &NotExecutableError{Name: argv[0], Err: err}
		}
		return nil, &NotFoundError{Name: argv[0], Err: err}
	}
	// The kernel drops an unprivileged profiler's events when the program it execs cannot be
	// read (the process becomes non-dumpable), so say so now rather than record nothing.
	if f, err := os.Open(path); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("cannot read %s: permission denied (the kernel lets no unprivileged profiler sample a program its user cannot read; make it readable or record as root)", argv[0])
		}
	} else {
		f.Close()
	}
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

// Pid is the gate's pid, which becomes the command's pid at exec.
func (g *Gate) Pid() int { return g.cmd.Process.Pid }

// Release lets the command exec.
func (g *Gate) Release() error {
	_, err := g.release.Write([]byte{1})
	g.release.Close()
	if err != nil {
		return fmt.Errorf("release gate: %w", err)
	}
	return nil
}

// Abort ends the gate without running the command.
func (g *Gate) Abort() {
	g.release.Close()
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

package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/targetfile"
)

// maxMapsLines and maxMapsBytes bound how much of /proc/PID/maps is read.
const (
	maxMapsLines = 1 << 20
	maxMapsBytes = 64 << 20
)

// ReadMaps reads the executable mappings of a live process from /proc/PID/maps, stamped
// with time t.
func ReadMaps(pid int, t uint64) ([]Mapping, error) {
	// Reading maps takes the process's memory-map lock, which it can hold a long time
	// (a page fault on a file system that does not answer): the read has a deadline.
	data, err := targetfile.ReadPrefix(fmt.Sprintf("/proc/%d/maps", pid), maxMapsBytes)
	if err != nil {
		return nil, fmt.Errorf("read mappings of pid %d: %w", pid, err)
	}
	var out []Mapping
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for n := 0; sc.Scan() && n < maxMapsLines; n++ {
		m, ok := ParseMapsLine(sc.Text())
		if ok {
			m.Time = t
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// ParseMapsLine parses one executable line of /proc/PID/maps; other lines return false.
func ParseMapsLine(line string) (Mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 5 || len(f[1]) < 3 || f[1][2] != 'x' {
		return Mapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return Mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	off, err3 := strconv.ParseUint(f[2], 16, 64)
	if err1 != nil || err2 != nil || err3 != nil || end <= start {
		return Mapping{}, false
	}
	m := Mapping{Start: start, End: end, Pgoff: off}
	if maj, min, ok := strings.Cut(f[3], ":"); ok {
		a, _ := strconv.ParseUint(maj, 16, 32)
		b, _ := strconv.ParseUint(min, 16, 32)
		m.Maj, m.Min = uint32(a), uint32(b)
	}
	m.Ino, _ = strconv.ParseUint(f[4], 10, 64)
	// The path is the rest of the line after the fifth field (the inode), spaces included.
	rest := line
	for range 5 {
		rest = strings.TrimLeft(rest, " \t")
		j := strings.IndexAny(rest, " \t")
		if j < 0 {
			rest = ""
			break
		}
		rest = rest[j:]
	}
	m.Path = strings.TrimSpace(rest)
	return m, true
}

// ThreadIDs lists the threads of a live process.
func ThreadIDs(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// ThreadName reads a live thread's name.
func ThreadName(pid, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Gone reports whether process pid has exited: it no longer exists, or it is a zombie
// whose parent has not reaped it yet (it will run no more code).
func Gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the command name, which is in parentheses and may hold any byte.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// NSPid is pid as the process itself sees it: the last NSpid of /proc/PID/status (its pid
// in the innermost pid namespace, a container's), or pid when there is none.
func NSPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return pid
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if n, err := strconv.Atoi(f[len(f)-1]); err == nil && n > 0 {
					return n
				}
			}
		}
	}
	return pid
}

// ReadCreds reads process pid's credentials from /proc/PID/status.
func ReadCreds(pid int) (Creds, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Creds{}, fmt.Errorf("read credentials of pid %d: %w", pid, err)
	}
	var c Creds
	var haveUID bool
	for _, line := range strings.Split(string(b), "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		switch key {
		case "Uid":
			if len(f) == 4 { // real, effective, saved, file-system
				if v, err := strconv.ParseUint(f[3], 10, 32); err == nil {
					c.UID, haveUID = uint32(v), true
				}
			}
		case "Gid":
			if len(f) == 4 {
				if v, err := strconv.ParseUint(f[3], 10, 32); err == nil {
					c.GIDs = append([]uint32{uint32(v)}, c.GIDs...)
				}
			}
		case "Groups":
			for _, g := range f {
				if v, err := strconv.ParseUint(g, 10, 32); err == nil {
					c.GIDs = append(c.GIDs, uint32(v))
				}
			}
		}
	}
	if !haveUID {
		return Creds{}, fmt.Errorf("read credentials of pid %d: no Uid line", pid)
	}
	return c, nil
}

// Stat is what stax reads of a process's /proc/PID/stat.
type Stat struct {
	// State is R (running), S (sleeping), D (disk wait), T (stopped by a signal), t
	// (stopped by a debugger), Z (zombie), ...
	State byte
	// TTY is tty_nr, the device number of the process's controlling terminal: 0 for none.
	TTY int
}

// Stopped reports whether the process is stopped: by a signal (SIGSTOP, Ctrl-Z) or by a
// debugger.
func (s Stat) Stopped() bool { return s.State == 'T' || s.State == 't' }

// ParseStat parses the contents of /proc/PID/stat (see proc(5)).
func ParseStat(b []byte) (Stat, error) {
	// The command name, second, is in parentheses and may hold any byte, ')' and spaces
	// included: the fields that follow are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, fmt.Errorf("parse process stat: no command name")
	}
	// state ppid pgrp session tty_nr ...
	f := strings.Fields(string(b[i+1 : min(len(b), i+1+256)]))
	if len(f) < 5 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("parse process stat: %d fields after the command name, want 5 or more", len(f))
	}
	tty, err := strconv.ParseInt(f[4], 10, 32)
	if err != nil {
		return Stat{}, fmt.Errorf("parse process stat: tty_nr %q: %w", f[4], err)
	}
	return Stat{State: f[0][0], TTY: int(tty)}, nil
}

// ReadStat reads /proc/PID/stat of process pid.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, fmt.Errorf("read process stat: %w", err)
	}
	return ParseStat(b)
}

// Terminal is the device number of this process's controlling terminal, 0 when it has
// none.
func Terminal() int {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		return 0
	}
	return st.TTY
}

package proc

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseMapsLine(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		want   Mapping
		wantOK bool
	}{
		{
			name:   "executable file",
			line:   "00400000-00452000 r-xp 00001000 08:02 173521      /usr/bin/dbus-daemon",
			want:   Mapping{Start: 0x400000, End: 0x452000, Pgoff: 0x1000, Maj: 8, Min: 2, Ino: 173521, Path: "/usr/bin/dbus-daemon"},
			wantOK: true,
		},
		{
			name:   "path with spaces",
			line:   "7f1c2e000000-7f1c2e100000 r-xp 00000000 fd:01 4242    /opt/My App/lib/lib x.so",
			want:   Mapping{Start: 0x7f1c2e000000, End: 0x7f1c2e100000, Maj: 0xfd, Min: 1, Ino: 4242, Path: "/opt/My App/lib/lib x.so"},
			wantOK: true,
		},
		{
			name:   "deleted file",
			line:   "7f0000000000-7f0000001000 r-xs 00000000 00:05 99  /memfd:jit (deleted)",
			want:   Mapping{Start: 0x7f0000000000, End: 0x7f0000001000, Maj: 0, Min: 5, Ino: 99, Path: "/memfd:jit (deleted)"},
			wantOK: true,
		},
		{
			name:   "anonymous executable",
			line:   "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 ",
			want:   Mapping{Start: 0x7f0000000000, End: 0x7f0000001000},
			wantOK: true,
		},
		{
			name:   "tabs between fields",
			line:   "1000-2000\tr-xp\t00000000\t08:01\t55\t/bin/t",
			want:   Mapping{Start: 0x1000, End: 0x2000, Maj: 8, Min: 1, Ino: 55, Path: "/bin/t"},
			wantOK: true,
		},
		{"read-only", "00651000-00652000 r--p 00051000 08:02 173521      /usr/bin/dbus-daemon", Mapping{}, false},
		{"writable data", "00652000-00655000 rw-p 00052000 08:02 173521      /usr/bin/dbus-daemon", Mapping{}, false},
		{"heap", "00e03000-00e24000 rw-p 00000000 00:00 0                                  [heap]", Mapping{}, false},
		{"empty", "", Mapping{}, false},
		{"garbage", "hello world", Mapping{}, false},
		{"too few fields", "1000-2000 r-xp 0 08:01", Mapping{}, false},
		{"no dash", "10002000 r-xp 00000000 08:01 1 /x", Mapping{}, false},
		{"bad start", "zz-2000 r-xp 00000000 08:01 1 /x", Mapping{}, false},
		{"bad end", "1000-zz r-xp 00000000 08:01 1 /x", Mapping{}, false},
		{"bad offset", "1000-2000 r-xp 0000zz00 08:01 1 /x", Mapping{}, false},
		{"end before start", "2000-1000 r-xp 00000000 08:01 1 /x", Mapping{}, false},
		{"empty range", "2000-2000 r-xp 00000000 08:01 1 /x", Mapping{}, false},
		{"short perms", "1000-2000 rx 00000000 08:01 1 /x", Mapping{}, false},
		{"address overflow", "10000000000000000-10000000000000001 r-xp 00000000 08:01 1 /x", Mapping{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseMapsLine(tc.line)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if !sameMapping(got, tc.want) {
				t.Errorf("mapping = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
}

// TestParseMapsLineInodeInAddress covers lines whose inode digits also appear earlier in the
// line (an inode of 0 is the rule for [vdso] and anonymous code): the path must still be the
// text after the inode field.
func TestParseMapsLineInodeInAddress(t *testing.T) {
	tests := []struct {
		line, path string
	}{
		{"7ffd6a1f2000-7ffd6a1f4000 r-xp 00000000 00:00 0                          [vdso]", "[vdso]"},
		{"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]", "[vsyscall]"},
		{"10000-11000 r-xp 00000000 08:01 1 /bin/x", "/bin/x"},
		{"7f00aa000000-7f00aa100000 r-xp 00000000 08:01 7 /lib/x 7.so", "/lib/x 7.so"},
	}
	for _, tc := range tests {
		m, ok := ParseMapsLine(tc.line)
		if !ok || m.Path != tc.path {
			t.Errorf("ParseMapsLine(%q) = %q, %v; want path %q", tc.line, m.Path, ok, tc.path)
		}
	}
}

func sameMapping(a, b Mapping) bool {
	return a.Start == b.Start && a.End == b.End && a.Pgoff == b.Pgoff && a.Path == b.Path &&
		a.Maj == b.Maj && a.Min == b.Min && a.Ino == b.Ino && a.Time == b.Time && a.EndTime == b.EndTime
}

// TestReadMapsSelf reads this test process's own mappings: its executable must be there.
func TestReadMapsSelf(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ms, err := ReadMaps(os.Getpid(), 42)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range ms {
		if m.Time != 42 || m.End <= m.Start {
			t.Errorf("bad mapping %+v", m)
		}
		if m.Path == exe {
			found = true
		}
	}
	if !found {
		t.Errorf("own executable %s not among %d executable mappings", exe, len(ms))
	}
	if _, err := ReadMaps(-1, 0); err == nil {
		t.Errorf("no error for pid -1")
	}
	tids, err := ThreadIDs(os.Getpid())
	if err != nil || len(tids) == 0 {
		t.Errorf("ThreadIDs = %v, %v", tids, err)
	}
	if name := ThreadName(os.Getpid(), os.Getpid()); name == "" {
		t.Errorf("no name for the main thread")
	}
}

// FuzzParseMapsLine: any line either fails or gives a non-empty range and a trimmed path
// taken from the line.
func FuzzParseMapsLine(f *testing.F) {
	f.Add("00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon")
	f.Add("7f1c2e000000-7f1c2e100000 r-xp 00000000 fd:01 4242    /opt/My App/lib x.so")
	f.Add("7ffd6a1f2000-7ffd6a1f4000 r-xp 00000000 00:00 0                          [vdso]")
	f.Add("00e03000-00e24000 rw-p 00000000 00:00 0                                  [heap]")
	f.Add("1000-2000 r-x")
	f.Fuzz(func(t *testing.T, line string) {
		m, ok := ParseMapsLine(line)
		if !ok {
			return
		}
		if m.End <= m.Start {
			t.Errorf("range %#x-%#x", m.Start, m.End)
		}
		if m.Path != strings.TrimSpace(m.Path) {
			t.Errorf("path %q not trimmed", m.Path)
		}
		if !strings.Contains(line, m.Path) {
			t.Errorf("path %q not in line", m.Path)
		}
	})
}

func TestGone(t *testing.T) {
	if Gone(os.Getpid()) {
		t.Error("this process is gone")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Until it is reaped, the child is a zombie: gone all the same.
	deadline := time.Now().Add(10 * time.Second)
	for !Gone(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped child is not gone")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Wait()
	if !Gone(cmd.Process.Pid) {
		t.Error("a reaped child is not gone")
	}
}

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Stat
		ok   bool
	}{
		{"1234 (stax) T 1000 1234 1000 34817 1234 4194560 123 0 0 0", Stat{State: 'T', TTY: 34817}, true},
		{"77 (a) b) (c) S 1 77 77 0 -1 4194304", Stat{State: 'S', TTY: 0}, true},
		{"9 (x\ny) t 1 9 9 -5 9", Stat{State: 't', TTY: -5}, true},
		{"9 (x) R 1 9 9", Stat{}, false},
		{"9 x R 1 9 9 0", Stat{}, false},
		{"9 (x) RR 1 9 9 0", Stat{}, false},
		{"9 (x) R 1 9 9 tty", Stat{}, false},
		{"", Stat{}, false},
	} {
		got, err := ParseStat([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseStat(%q) = %+v, %v; want %+v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	st, err := ReadStat(os.Getpid())
	if err != nil || (st.State != 'R' && st.State != 'S') {
		t.Errorf("this process: %+v, %v; want running or sleeping", st, err)
	}
	if st.Stopped() {
		t.Errorf("this process is stopped")
	}
}

// TestReadStatStopped stops a child with SIGSTOP: its stat says so until SIGCONT.
func TestReadStatStopped(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	syscall.Kill(cmd.Process.Pid, syscall.SIGSTOP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := ReadStat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.Stopped() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a child sent SIGSTOP is in state %c", st.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
}

// FuzzParseStat: any input either fails or gives a one-byte state found in the input.
func FuzzParseStat(f *testing.F) {
	f.Add("1234 (stax) T 1000 1234 1000 34817 1234 4194560 123 0 0 0")
	f.Add("77 (a) b) (c) S 1 77 77 0 -1 4194304")
	f.Add("9 (x) R 1 9")
	f.Fuzz(func(t *testing.T, in string) {
		st, err := ParseStat([]byte(in))
		if err != nil {
			return
		}
		if strings.IndexByte(in, st.State) < 0 {
			t.Errorf("state %q not in the input", st.State)
		}
	})
}

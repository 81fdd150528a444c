//go:build linux && amd64

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/jit"
)

func TestGenLoop(t *testing.T) {
	tests := []struct {
		n    uint64
		want []byte
	}{
		{5, []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0xc7, 0xc0, 0, 0, 0, 0, 0x48, 0xb9, 5, 0, 0, 0, 0, 0, 0, 0, 0x48, 0x39, 0xc8, 0x74, 0x06, 0x48, 0x83, 0xc0, 0x01, 0xeb, 0xf5, 0x5d, 0xc3}},
	}
	for _, tt := range tests {
		got := genLoop(tt.n)
		if !bytes.Equal(got, tt.want) || len(got) != codeLen {
			t.Errorf("genLoop(%d) = % x", tt.n, got)
		}
	}
	if got := binary.LittleEndian.Uint64(genLoop(1 << 40)[offMovRcx+2:]); got != 1<<40 {
		t.Errorf("64-bit count encoded as %d", got)
	}
}

// TestRun builds toyjit, runs it with small counts, and checks that its
// dump names the two functions and carries the code that is in its memory.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "toyjit")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-n1", "100000", "-n2", "200000", "-dir", dir, "-perfmap", "-wait")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("toyjit: %v", err)
		}
	}()
	var out []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "ready" {
		out = append(out, sc.Text())
	}
	joined := strings.Join(out, "\n")
	for _, want := range []string{"jitted_func1 at", "returned 100000\n", "jitted_func2 at", "returned 200000"} {
		if !strings.Contains(joined+"\n", want) {
			t.Errorf("output lacks %q:\n%s", want, joined)
		}
	}

	pid := cmd.Process.Pid
	path := filepath.Join(dir, "jit-"+strconv.Itoa(pid)+".dump")
	tl, err := jit.OpenTailer(path, pid, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	recs, _, err := tl.Poll()
	if err != nil {
		t.Fatal(err)
	}
	tab := jit.NewTable()
	tab.Apply(1, jit.SourceJitdump, recs)
	if st := tl.Status(); st.Functions != 2 || !st.Closed {
		t.Errorf("status = %+v", st)
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	funcs := tab.Funcs()
	if len(funcs) != 2 {
		t.Fatalf("%d functions in the dump", len(funcs))
	}
	for i, f := range funcs {
		want := "jitted_func" + strconv.Itoa(i+1)
		if f.Name != want || len(f.Code) != codeLen {
			t.Errorf("function %d: %s with %d code bytes", i, f.Name, len(f.Code))
			continue
		}
		live := make([]byte, len(f.Code))
		if _, err := mem.ReadAt(live, int64(f.Start)); err != nil {
			t.Fatalf("read %s from memory: %v", f.Name, err)
		}
		if !bytes.Equal(live, f.Code) {
			t.Errorf("%s: dump has % x, memory has % x", f.Name, f.Code, live)
		}
		file, line, ok := tab.LineAt(f, f.Start+offAdd)
		if !ok || filepath.Base(file) != "loops.toy" || line != int(4+8*i)+3 {
			t.Errorf("%s: add instruction at %s:%d", f.Name, file, line)
		}
	}
	pm, err := jit.OpenPerfMapTailer(filepath.Join(dir, "perf-"+strconv.Itoa(pid)+".map"), uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	defer pm.Close()
	if es, _, err := pm.Poll(); err != nil || len(es) != 2 || es[0].Name != "jitted_func1" {
		t.Errorf("perf map: %+v, %v", es, err)
	}
}

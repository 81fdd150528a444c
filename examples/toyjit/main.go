//go:build linux && amd64

// Command toyjit is a tiny just-in-time compiler that shows how stax names
// and attributes generated code.
//
// At run time it emits x86-64 machine code for two counting loops,
// jitted_func1 (counting to 1e9 by default) and jitted_func2 (2e9),
// announces them in /tmp/jit-<pid>.dump through the pkg/jitdump writer,
// with line tables pointing into loops.toy, and then calls each of them.
// Both functions keep a standard frame-pointer prologue and epilogue, so
// frame-pointer unwinding walks from the generated code back into Go.
//
//	go run ./examples/toyjit -n1 100000000 -n2 200000000
//
// With -cpu DURATION the loops run in rounds (jitted_func1 counts to 2^22,
// then jitted_func2 to 2^23) until the thread has used DURATION of CPU
// time: the same 1:2 split, with a length that does not depend on the
// machine's speed.
//
// Profile it with stax while it runs; the samples in the loops resolve to
// jitted_func1 and jitted_func2 and to lines of loops.toy.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
	"unsafe"

	"github.com/stax-profiler/stax/pkg/jitdump"
	"golang.org/x/sys/unix"
)

// Offsets of the instructions genLoop emits.
const (
	offMovRax = 4  // mov rax, 0
	offMovRcx = 11 // mov rcx, imm64
	offLoop   = 21 // cmp rax, rcx; je done
	offAdd    = 26 // add rax, 1
	offJmp    = 30 // jmp loop
	offDone   = 32 // pop rbp; ret
	codeLen   = 34
)

// genLoop returns machine code for a function that counts from 0 to n and
// returns n:
//
//	push rbp
//	mov  rbp, rsp
//	mov  rax, 0
//	mov  rcx, n        ; 64-bit immediate
//	loop:
//	cmp  rax, rcx
//	je   done
//	add  rax, 1
//	jmp  loop
//	done:
//	pop  rbp
//	ret
func genLoop(n uint64) []byte {
	c := []byte{
		0x55,             // push rbp
		0x48, 0x89, 0xe5, // mov rbp, rsp
		0x48, 0xc7, 0xc0, 0, 0, 0, 0, // mov rax, 0
		0x48, 0xb9, // mov rcx, imm64
	}
	c = binary.LittleEndian.AppendUint64(c, n)
	c = append(c,
		0x48, 0x39, 0xc8, // loop: cmp rax, rcx
		0x74, offDone-offAdd, // je done (rel8)
		0x48, 0x83, 0xc0, 0x01, // add rax, 1
		0xeb, 0x100+offLoop-offDone, // jmp loop (rel8, negative)
		0x5d, // done: pop rbp
		0xc3, // ret
	)
	return c
}

// lines maps the instructions of a function declared at line decl of
// loops.toy to that file's lines.
func lines(addr uint64, file string, decl uint32) []jitdump.DebugEntry {
	return []jitdump.DebugEntry{
		{Addr: addr, Line: decl, File: file},
		{Addr: addr + offMovRax, Line: decl + 1, File: file},
		{Addr: addr + offMovRcx, Line: decl + 2, File: file},
		{Addr: addr + offAdd, Line: decl + 3, File: file},
		{Addr: addr + offJmp, Line: decl + 4, File: file},
		{Addr: addr + offDone, Line: decl + 5, File: file},
	}
}

// sourceFile returns the path of loops.toy next to this file, or its bare
// name when the build dropped source paths.
func sourceFile() string {
	_, self, _, ok := runtime.Caller(0)
	if ok {
		p := filepath.Join(filepath.Dir(self), "loops.toy")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "loops.toy"
}

func main() {
	n1 := flag.Uint64("n1", 1_000_000_000, "count of jitted_func1")
	n2 := flag.Uint64("n2", 2_000_000_000, "count of jitted_func2")
	dir := flag.String("dir", "/tmp", "directory of jit-<pid>.dump")
	perfMap := flag.Bool("perfmap", false, "also write perf-<pid>.map in -dir")
	mark := flag.Bool("mmap", false, "map the dump executable, for perf inject --jit")
	wait := flag.Bool("wait", false, "after running, print \"ready\" and wait for a line on stdin before exiting")
	cpu := flag.Duration("cpu", 0, "run both loops in 1:2 rounds until the thread used this much CPU time (overrides -n1, -n2)")
	source := flag.String("source", "", "source file named in the debug info (default: loops.toy beside this program's source)")
	flag.Parse()
	if *cpu > 0 {
		*n1, *n2 = roundCount, 2*roundCount
	}
	src := sourceFile()
	if *source != "" {
		src = *source
	}
	if err := run(*n1, *n2, *cpu, *dir, src, *perfMap, *mark, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "toyjit:", err)
		os.Exit(1)
	}
}

// roundCount is jitted_func1's count in one round of -cpu mode: a few milliseconds.
const roundCount = 1 << 22

func threadCPU() time.Duration {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

func run(n1, n2 uint64, cpu time.Duration, dir, src string, perfMap, mark, wait bool) error {
	w, err := jitdump.Create(dir)
	if err != nil {
		return err
	}
	defer w.Close()
	if mark {
		if err := w.MarkMmap(); err != nil {
			return err
		}
	}
	var pm *jitdump.PerfMap
	if perfMap {
		if pm, err = jitdump.CreatePerfMap(dir); err != nil {
			return err
		}
		defer pm.Close()
	}

	mem, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return fmt.Errorf("map code memory: %w", err)
	}
	funcs := []struct {
		name string
		n    uint64
		off  int
		decl uint32
	}{
		{"jitted_func1", n1, 0, 4},
		{"jitted_func2", n2, 64, 12},
	}
	for _, f := range funcs {
		copy(mem[f.off:], genLoop(f.n))
	}
	if err := unix.Mprotect(mem, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		return fmt.Errorf("protect code memory: %w", err)
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	for _, f := range funcs {
		addr := base + uint64(f.off)
		if err := w.WriteDebugInfo(addr, lines(addr, src, f.decl)); err != nil {
			return err
		}
		if err := w.WriteCodeLoad(f.name, addr, mem[f.off:f.off+codeLen]); err != nil {
			return err
		}
		if pm != nil {
			if err := pm.Add(addr, codeLen, f.name); err != nil {
				return err
			}
		}
	}
	fmt.Printf("dump %s\n", w.Path())
	if cpu > 0 {
		runtime.LockOSThread()
		var rounds uint64
		for end := threadCPU() + cpu; threadCPU() < end; rounds++ {
			for _, f := range funcs {
				callJIT(uintptr(base + uint64(f.off)))
			}
		}
		fmt.Printf("%d rounds of jitted_func1 and jitted_func2\n", rounds)
	} else {
		for _, f := range funcs {
			addr := base + uint64(f.off)
			r := callJIT(uintptr(addr))
			fmt.Printf("%s at %#x returned %d\n", f.name, addr, r)
		}
	}
	if err := w.WriteClose(); err != nil {
		return err
	}
	if wait {
		fmt.Println("ready")
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	return nil
}

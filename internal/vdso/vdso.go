// Package vdso reads the kernel's vdso image: the small ELF shared object the kernel maps
// into every process (as [vdso]) for system calls done in user space, such as
// clock_gettime. It has no file behind it, but its bytes are a complete ELF image, so its
// symbols and call-frame information can be read from memory.
package vdso

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// Name is the path the kernel gives the vdso's mapping.
const Name = "[vdso]"

// MaxSize bounds the bytes read for one vdso image: the vdso is a page or two of code.
const MaxSize = 16 << 12

// atSysinfoEHDR is the auxiliary vector entry that holds the vdso's address.
const atSysinfoEHDR = 33

// Read returns the vdso image mapped at [start, end) in process pid, read from its memory.
func Read(pid int, start, end uint64) ([]byte, error) {
	return read("/proc/"+strconv.Itoa(pid)+"/mem", start, end)
}

func read(memPath string, start, end uint64) ([]byte, error) {
	if end <= start || end-start > MaxSize {
		return nil, fmt.Errorf("read the vdso: mapping size %#x is out of bounds", end-start)
	}
	f, err := os.Open(memPath)
	if err != nil {
		return nil, fmt.Errorf("read the vdso: %w", err)
	}
	defer f.Close()
	b := make([]byte, end-start)
	if _, err := f.ReadAt(b, int64(start)); err != nil {
		return nil, fmt.Errorf("read the vdso: %w", err)
	}
	if !bytes.HasPrefix(b, []byte("\x7fELF")) {
		return nil, errors.New("read the vdso: no ELF header at the start of the mapping")
	}
	return b, nil
}

var self struct {
	once sync.Once
	b    []byte
	err  error
}

// Self returns stax's own vdso image. Every process on one kernel maps the same vdso (one
// per ABI), so it stands in for a target's that can no longer be read. The slice must not
// be modified.
func Self() ([]byte, error) {
	self.once.Do(func() { self.b, self.err = readSelf() })
	return self.b, self.err
}

// readSelf finds the vdso through the auxiliary vector (AT_SYSINFO_EHDR), else by its name
// in /proc/self/maps, and reads the whole mapping.
func readSelf() ([]byte, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("find the vdso: %w", err)
	}
	want, _ := auxv(atSysinfoEHDR)
	var start, end uint64
	for _, line := range bytes.Split(maps, []byte("\n")) {
		var s, e uint64
		if _, err := fmt.Sscanf(string(line), "%x-%x", &s, &e); err != nil {
			continue
		}
		if (want != 0 && s == want) || (want == 0 && bytes.HasSuffix(line, []byte(Name))) {
			start, end = s, e
			break
		}
	}
	if start == 0 {
		return nil, errors.New("find the vdso: no [vdso] mapping in /proc/self/maps")
	}
	return read("/proc/self/mem", start, end)
}

// auxv returns the value of entry typ of this process's auxiliary vector.
func auxv(typ uint64) (uint64, bool) {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0, false
	}
	for len(b) >= 16 {
		k, v := binary.NativeEndian.Uint64(b), binary.NativeEndian.Uint64(b[8:])
		if k == 0 {
			break
		}
		if k == typ {
			return v, true
		}
		b = b[16:]
	}
	return 0, false
}

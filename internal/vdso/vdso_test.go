package vdso

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/symbol/elfsym"
	"github.com/stax-profiler/stax/internal/testutil"
)

// ownMapping finds this process's [vdso] mapping.
func ownMapping(t *testing.T) proc.Mapping {
	t.Helper()
	maps, err := proc.ReadMaps(os.Getpid(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if m.Path == Name {
			return m
		}
	}
	testutil.Require(t, testutil.EnvPerf, "this process maps no vdso")
	return proc.Mapping{}
}

// TestSelfParses reads stax's own vdso, through the auxiliary vector, and parses its
// dynamic symbols: clock_gettime is there, inside the image.
func TestSelfParses(t *testing.T) {
	m := ownMapping(t)
	own, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(own)) != m.End-m.Start {
		t.Errorf("vdso of %d bytes, mapping of %d", len(own), m.End-m.Start)
	}
	byPid, err := Read(os.Getpid(), m.Start, m.End)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(byPid, own) {
		t.Error("the vdso read by pid differs from Self's")
	}
	im, err := elfsym.Load(bytes.NewReader(own), Name)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	found := false
	for _, s := range im.Symbols() {
		names = append(names, s.Name)
		if strings.HasSuffix(s.Name, "clock_gettime") {
			found = true
		}
		if s.Size == 0 {
			t.Errorf("symbol %s has no size", s.Name)
		}
		if off, ok := vaddrToOffset(im, s.Addr); !ok || off+s.Size > uint64(len(own)) {
			t.Errorf("symbol %s at %#x+%d lies outside the %d bytes of the image", s.Name, s.Addr, s.Size, len(own))
		}
	}
	if !found {
		t.Errorf("no clock_gettime among the vdso's symbols %v", names)
	}
	if len(im.BuildID) == 0 {
		t.Log("the vdso has no build-id")
	}
}

func vaddrToOffset(im *elfsym.Image, vaddr uint64) (uint64, bool) {
	for _, s := range im.Loads {
		if vaddr >= s.Vaddr && vaddr < s.Vaddr+s.Filesz {
			return vaddr - s.Vaddr + s.Off, true
		}
	}
	return 0, false
}

func TestReadRefusesBadMappings(t *testing.T) {
	m := ownMapping(t)
	if _, err := Read(os.Getpid(), m.Start, m.Start+MaxSize+4096); err == nil {
		t.Error("a mapping past MaxSize was read")
	}
	if _, err := Read(os.Getpid(), m.End, m.Start); err == nil {
		t.Error("an empty mapping was read")
	}
	if _, err := Read(1<<30, m.Start, m.End); err == nil {
		t.Error("the vdso of a process that does not exist was read")
	}
}

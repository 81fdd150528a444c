package recorder

import (
	"bytes"
	"testing"

	"github.com/stax-profiler/stax/internal/jit"
	"github.com/stax-profiler/stax/internal/store"
)

// TestUpgradeCodeDropsGaps: code read from memory with a part that was not captured takes
// the JIT's own copy, whole, once a jitdump announces it.
func TestUpgradeCodeDropsGaps(t *testing.T) {
	r := newRecorder(Options{})
	const pid, start = 7, 0x7f0000001000
	code := []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xc0, 0x01, 0xeb, 0xfa}
	r.codes = []store.Code{{Pid: pid, Start: start, Size: uint64(len(code)), Time: 50, Bytes: make([]byte, len(code)),
		Gaps: []store.Gap{{Start: start + 4, End: start + uint64(len(code)), Why: "the process had exited before they were read"}}, Origin: "memory"}}
	r.memCodes = []int{0}
	r.res.JIT(pid).Apply(1, jit.SourceJitdump, []jit.Record{{ID: jit.RecCodeLoad, Timestamp: 40,
		Load: &jit.CodeLoad{Pid: pid, CodeAddr: start, CodeSize: uint64(len(code)), Name: "f", Code: code}}})
	r.upgradeCode()
	if c := r.codes[0]; !bytes.Equal(c.Bytes, code) || len(c.Gaps) != 0 || c.Origin != "jitdump" || c.LoadTime != 40 {
		t.Errorf("upgraded code: bytes % x, gaps %v, origin %q, load %d", c.Bytes, c.Gaps, c.Origin, c.LoadTime)
	}
}

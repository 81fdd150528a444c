package cli

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestWithGoSpans(t *testing.T) {
	if got := withGoSpans([]string{"A=1"}); len(got) != 2 || got[1] != "STAX_SPANS=1" {
		t.Errorf("withGoSpans: %q", got)
	}
	if got := withGoSpans([]string{"STAX_SPANS=0"}); len(got) != 1 {
		t.Errorf("withGoSpans overrode the user's STAX_SPANS: %q", got)
	}
}

// TestAttachSpans: the file that tells an attached process it is recorded exists while
// stax records it, and is gone after.
func TestAttachSpans(t *testing.T) {
	flag := "/tmp/stax-" + strconv.Itoa(os.Getpid()) + ".recording"
	os.Remove(flag)
	done := attachSpans(os.Getpid())
	if _, err := os.Stat(flag); err != nil {
		t.Fatalf("attached, but %v", err)
	}
	done()
	if _, err := os.Stat(flag); err == nil {
		t.Fatalf("%s left after the recording", flag)
	}
}

func TestITTHint(t *testing.T) {
	maps := []byte("7f0000000000-7f0000100000 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libdnnl.so.2.6\n" +
		"7f0000200000-7f0000300000 r-xp 00000000 08:01 124 /usr/lib/x86_64-linux-gnu/libc.so.6\n")
	if h := ittHint(7, maps, []byte("PATH=/bin\x00HOME=/root\x00")); !strings.Contains(h, "pid 7 loaded libdnnl.so.2.6") {
		t.Errorf("no hint for a process with libdnnl and no collector: %q", h)
	}
	if h := ittHint(7, maps, []byte("INTEL_LIBITTNOTIFY64=/opt/lib.so\x00")); h != "" {
		t.Errorf("a hint though a collector is named: %q", h)
	}
	if h := ittHint(7, []byte("7f0000200000-7f0000300000 r-xp 00000000 08:01 124 /usr/lib/libc.so.6\n[vdso]\n"), nil); h != "" {
		t.Errorf("a hint for a process without an ITT library: %q", h)
	}
}

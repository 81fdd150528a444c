package cli

import (
	"os"
	"strconv"
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

package store

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestEndFileIsWrittenInPlace: the reserved end file reads as nothing until written, then
// as what was written, at the size it was reserved at (no new room needed on a full disk),
// and is gone with the run.
func TestEndFileIsWrittenInPlace(t *testing.T) {
	t.Setenv("STAX_HOME", t.TempDir())
	if err := os.MkdirAll(Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := ReserveEnd("r1"); err != nil {
		t.Fatal(err)
	}
	if e, err := ReadEnd("r1"); e != nil || err != nil {
		t.Fatalf("a blank end file reads as %+v, %v", e, err)
	}
	code := 3
	want := End{Incomplete: true, Reason: strings.Repeat("no space left on device ", 400), Samples: 120219, Seconds: 60.5, ExitCode: &code}
	if err := WriteEnd("r1", want); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(EndPath("r1")); err != nil || info.Size() != EndFileSize {
		t.Fatalf("end file: %v, %v", info, err)
	}
	e, err := ReadEnd("r1")
	if err != nil || e == nil || !e.Incomplete || e.Samples != want.Samples || e.Seconds != want.Seconds || *e.ExitCode != 3 || !strings.HasPrefix(want.Reason, e.Reason) {
		t.Fatalf("read back %+v, %v", e, err)
	}
	if e, err := ReadEnd("none"); e != nil || err != nil {
		t.Errorf("no end file reads as %+v, %v", e, err)
	}
	if err := Remove("r1"); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if _, err := os.Stat(EndPath("r1")); !os.IsNotExist(err) {
		t.Errorf("the end file outlives its run: %v", err)
	}
}

// FuzzParseEnd reads arbitrary end files: an End, nothing or an error, never a panic.
func FuzzParseEnd(f *testing.F) {
	f.Add(bytes.Repeat([]byte{' '}, EndFileSize))
	f.Add([]byte(`{"incomplete":true,"reason":"write: no space left on device","samples":120219,"seconds":60.2,"exit_code":0}`))
	f.Add([]byte(`{"incomplete":true,"seconds":-1}`))
	f.Add([]byte(`{"incomplete":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEnd(b)
		if err == nil && e != nil && (e.Seconds < 0 || len(b) > EndFileSize) {
			t.Fatalf("accepted %+v", e)
		}
	})
}

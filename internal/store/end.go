package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// A run's end file says how its recording ended when the run's file cannot: the final save
// failed (a full disk), so the run's file holds an earlier checkpoint, which reads as a run
// whose recorder died. It is reserved when the run's id is claimed, EndFileSize bytes of
// spaces, so that saying so needs no new space on a full disk: the recorder writes its
// JSON (End) over the spaces in place. A recording that saves its end removes the file; a
// recorder that dies leaves it blank (the run is then crashed, as its file says).
const EndFileSize = 4096

// End is what a run's end file says.
type End struct {
	// Incomplete: the final save failed; the run's file holds its last good checkpoint.
	Incomplete bool   `json:"incomplete"`
	Reason     string `json:"reason,omitempty"` // why the save failed
	// Samples and Seconds are what was recorded: the run's file holds fewer (its meta says
	// how many, and up to when).
	Samples uint64  `json:"samples"`
	Seconds float64 `json:"seconds"`
	// ExitCode is the launched command's exit status, where it ended.
	ExitCode *int `json:"exit_code,omitempty"`
}

// EndPath is where the run with id keeps its end file.
func EndPath(id string) string { return filepath.Join(Dir(), id+".end") }

// ReserveEnd creates the run's end file, blank, at its full size.
func ReserveEnd(id string) error {
	f, err := os.OpenFile(EndPath(id), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("reserve the run's end file: %w", err)
	}
	_, err = f.Write(bytes.Repeat([]byte{' '}, EndFileSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(EndPath(id))
		return fmt.Errorf("reserve the run's end file: %w", err)
	}
	return nil
}

// WriteEnd writes e over the run's reserved end file, in place.
func WriteEnd(id string, e End) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	for len(b) > EndFileSize && len(e.Reason) > 0 {
		e.Reason = e.Reason[:len(e.Reason)/2]
		b, _ = json.Marshal(e)
	}
	b = append(b, bytes.Repeat([]byte{' '}, EndFileSize-len(b))...)
	f, err := os.OpenFile(EndPath(id), os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write the run's end file: %w", err)
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the run's end file: %w", err)
	}
	return nil
}

// RemoveEnd removes the run's end file: the run's file says how it ended.
func RemoveEnd(id string) error {
	if err := os.Remove(EndPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ReadEnd reads the run's end file: nil when there is none or it is blank (the recording
// is going on, or its recorder died), an error when it cannot be read or makes no sense.
func ReadEnd(id string) (*End, error) { return readEndFile(EndPath(id)) }

func readEndFile(path string) (*End, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the run's end file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, EndFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read the run's end file: %w", err)
	}
	return ParseEnd(b)
}

// ParseEnd reads an end file's bytes (see ReadEnd).
func ParseEnd(b []byte) (*End, error) {
	if len(b) > EndFileSize {
		return nil, fmt.Errorf("read the run's end file: over %d bytes", EndFileSize)
	}
	b = bytes.TrimRight(b, " \x00")
	if len(b) == 0 {
		return nil, nil
	}
	var e End
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("read the run's end file: %w", err)
	}
	if e.Seconds < 0 || e.Seconds != e.Seconds {
		return nil, errors.New("read the run's end file: a negative time")
	}
	return &e, nil
}

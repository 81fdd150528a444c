// Package debugfile locates the separate debugging-information file of an
// ELF image for stax, the way GDB does: first by build-id under
// <root>/usr/lib/debug/.build-id/, then by the .gnu_debuglink name (with
// its CRC-32 checked) next to the image, in its .debug/ directory and
// under <root>/usr/lib/debug/<image dir>/.
package debugfile

import (
	"bytes"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/stax-profiler/stax/internal/targetfile"
)

// ErrNotFound is returned when no debug file matches.
var ErrNotFound = errors.New("no separate debug file found")

// ErrNoBuildID is returned by [BuildID] for images without a GNU build-id.
var ErrNoBuildID = errors.New("no GNU build-id note")

// MaxNoteSize bounds the note sections read to verify a build-id.
const MaxNoteSize = 1 << 16

// Finder searches for debug files. The zero value searches the real file
// system root.
type Finder struct {
	// Root is prepended to the system debug directory
	// (<Root>/usr/lib/debug); "" means "/".
	Root string
}

// Query describes the image whose debug file is wanted.
type Query struct {
	Path         string // the image's path (for .gnu_debuglink lookups)
	BuildID      []byte // NT_GNU_BUILD_ID contents, may be nil
	DebugLink    string // .gnu_debuglink file name, may be ""
	DebugLinkCRC uint32
}

func (f Finder) debugDir() string {
	root := f.Root
	if root == "" {
		root = "/"
	}
	return filepath.Join(root, "usr", "lib", "debug")
}

// BuildIDPath returns <root>/usr/lib/debug/.build-id/xx/rest.debug for id,
// or "" when id is too short.
func (f Finder) BuildIDPath(id []byte) string {
	if len(id) < 2 {
		return ""
	}
	h := hex.EncodeToString(id)
	return filepath.Join(f.debugDir(), ".build-id", h[:2], h[2:]+".debug")
}

// Candidates lists the paths Find examines, in order.
func (f Finder) Candidates(q Query) []string {
	var out []string
	if p := f.BuildIDPath(q.BuildID); p != "" {
		out = append(out, p)
	}
	if q.DebugLink != "" && q.Path != "" {
		dir := filepath.Dir(q.Path)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		out = append(out,
			filepath.Join(dir, q.DebugLink),
			filepath.Join(dir, ".debug", q.DebugLink),
			filepath.Join(f.debugDir(), dir, q.DebugLink),
		)
	}
	return out
}

// Find returns the path of the debug file for q. Build-id candidates must
// carry the same build-id, debuglink candidates the recorded CRC-32; the
// image itself is never returned. Each candidate is opened with targetfile
// (the image's user chooses what lies next to it): a FIFO or a device there
// is refused and counted, never waited on.
func (f Finder) Find(q Query) (string, error) {
	self, _ := os.Stat(q.Path)
	var errs []error
	cands := f.Candidates(q)
	for i, p := range cands {
		file, err := targetfile.Open(p)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, targetfile.ErrNotRegular) {
				errs = append(errs, err)
			}
			continue
		}
		err = f.check(file, self, q, i == 0 && len(q.BuildID) >= 2)
		file.Close()
		if errors.Is(err, errSelf) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return p, nil
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("%w: %w", ErrNotFound, errors.Join(errs...))
	}
	return "", ErrNotFound
}

// errSelf says a candidate is the image itself.
var errSelf = errors.New("the image itself")

// check says whether the opened candidate is q's debug file: by build-id, else by CRC-32.
func (Finder) check(file *os.File, self os.FileInfo, q Query, byBuildID bool) error {
	st, err := file.Stat()
	if err != nil {
		return err
	}
	if self != nil && os.SameFile(self, st) {
		return errSelf
	}
	p := file.Name()
	ra := targetfile.ReaderAt(file)
	if byBuildID {
		id, err := BuildID(ra)
		if err != nil {
			return fmt.Errorf("read build-id of %s: %w", p, err)
		}
		if !bytes.Equal(id, q.BuildID) {
			return fmt.Errorf("check %s: build-id %x, want %x", p, id, q.BuildID)
		}
		return nil
	}
	crc, err := readerCRC(io.NewSectionReader(ra, 0, st.Size()))
	if err != nil {
		return fmt.Errorf("checksum debug file %s: %w", p, err)
	}
	if crc != q.DebugLinkCRC {
		return fmt.Errorf("check %s: crc32 %#08x, want %#08x", p, crc, q.DebugLinkCRC)
	}
	return nil
}

// FileCRC returns the CRC-32 (IEEE, as used by .gnu_debuglink) of a file.
func FileCRC(p string) (uint32, error) {
	f, err := targetfile.Open(p)
	if err != nil {
		return 0, fmt.Errorf("checksum debug file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("checksum debug file: %w", err)
	}
	crc, err := readerCRC(io.NewSectionReader(targetfile.ReaderAt(f), 0, st.Size()))
	if err != nil {
		return 0, fmt.Errorf("checksum debug file %s: %w", p, err)
	}
	return crc, nil
}

func readerCRC(r io.Reader) (uint32, error) {
	h := crc32.NewIEEE()
	if _, err := io.CopyBuffer(h, r, make([]byte, 1<<20)); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// ReadBuildID returns the GNU build-id of the ELF file at p.
func ReadBuildID(p string) ([]byte, error) {
	f, err := targetfile.Open(p)
	if err != nil {
		return nil, fmt.Errorf("read build-id: %w", err)
	}
	defer f.Close()
	id, err := BuildID(targetfile.ReaderAt(f))
	if err != nil {
		return nil, fmt.Errorf("read build-id of %s: %w", p, err)
	}
	return id, nil
}

// BuildID returns the GNU build-id of an ELF image. It reads only the
// headers and note sections.
func BuildID(r io.ReaderAt) (id []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			id, err = nil, fmt.Errorf("malformed ELF: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE || s.Size > MaxNoteSize {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := parseNote(data, f.ByteOrder); id != nil {
			return id, nil
		}
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > MaxNoteSize {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			continue
		}
		if id := parseNote(data, f.ByteOrder); id != nil {
			return id, nil
		}
	}
	return nil, ErrNoBuildID
}

func parseNote(b []byte, bo interface{ Uint32([]byte) uint32 }) []byte {
	for len(b) >= 12 {
		namesz, descsz, typ := uint64(bo.Uint32(b)), uint64(bo.Uint32(b[4:])), bo.Uint32(b[8:])
		b = b[12:]
		nameEnd := (namesz + 3) &^ 3
		descEnd := nameEnd + (descsz+3)&^3
		if nameEnd > uint64(len(b)) || descEnd > uint64(len(b)) || nameEnd+descsz > uint64(len(b)) {
			return nil
		}
		if typ == 3 && string(b[:namesz]) == "GNU\x00" && descsz > 0 && descsz <= 64 {
			return bytes.Clone(b[nameEnd : nameEnd+descsz])
		}
		b = b[descEnd:]
	}
	return nil
}

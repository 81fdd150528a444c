package symbol

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"

	"github.com/stax-profiler/stax/internal/symbol/elfsym"
	"github.com/stax-profiler/stax/internal/targetfile"
)

// Limits on MiniDebugInfo.
const (
	maxMiniDebugIn  = 64 << 20  // the compressed section
	maxMiniDebugOut = 256 << 20 // the ELF file inside it
)

// miniDebugInfo reads the symbol table an image carries xz-compressed in its .gnu_debugdata
// section (MiniDebugInfo, as Fedora ships): the local functions .dynsym lacks. It returns
// nil, nil when there is no such section.
func miniDebugInfo(path string) (im *elfsym.Image, err error) {
	defer func() {
		if p := recover(); p != nil {
			im, err = nil, fmt.Errorf("read .gnu_debugdata of %s: malformed: %v", path, p)
		}
	}()
	f, err := targetfile.OpenELF(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := f.Section(".gnu_debugdata")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if s.Size > maxMiniDebugIn {
		return nil, fmt.Errorf("read .gnu_debugdata of %s: %d bytes is over the %d-byte limit", path, s.Size, maxMiniDebugIn)
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("read .gnu_debugdata of %s: %w", path, err)
	}
	zr, err := xz.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read .gnu_debugdata of %s: %w", path, err)
	}
	inner, err := io.ReadAll(io.LimitReader(zr, maxMiniDebugOut+1))
	if err != nil {
		return nil, fmt.Errorf("read .gnu_debugdata of %s: %w", path, err)
	}
	if len(inner) > maxMiniDebugOut {
		return nil, fmt.Errorf("read .gnu_debugdata of %s: expands beyond %d bytes", path, maxMiniDebugOut)
	}
	return elfsym.Load(bytes.NewReader(inner), path+"[.gnu_debugdata]")
}

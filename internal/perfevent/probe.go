package perfevent

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// errProbeTarget is wrapped by what SymbolFileOffset and ProbePath find wrong with a
// uprobe's file or symbol.
var errProbeTarget = errors.New("probe target")

// ProbePath is the file a uprobe's PATH names, absolute: a path with a slash is the
// file's, relative to the current directory; a bare name is a program found in $PATH,
// as a shell would run it (a library takes its path: ldconfig -p lists them).
func ProbePath(path string) (string, error) {
	var abs string
	if strings.Contains(path, "/") {
		a, err := filepath.Abs(path)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w", errProbeTarget, path, err)
		}
		abs = a
	} else {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: %s is no program in $PATH: give the file's path (./%s; a library's: ldconfig -p | grep %s)", errProbeTarget, path, path, path)
		}
		if abs, err = filepath.Abs(p); err != nil {
			return "", fmt.Errorf("%w: %s: %w", errProbeTarget, p, err)
		}
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("%w: no file %s", errProbeTarget, abs)
	case err != nil:
		return "", fmt.Errorf("%w: %w", errProbeTarget, err)
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("%w: %s is not a regular file (a uprobe is in a program's or library's file)", errProbeTarget, abs)
	}
	return abs, nil
}

// maxListed bounds the addresses an ambiguity error lists.
const maxListed = 4

// SymbolFileOffset is where function symbol sym of the ELF file at path begins in the
// file, as the uprobe PMU takes it (perf_event_attr.config2), and the symbol's size (0:
// not known): its address translated through the PT_LOAD segment that holds it. The
// symbol is looked for in .symtab, then .dynsym; names that several symbols at different
// addresses share (static functions of several sources) are refused, and so are symbols
// the file imports.
func SymbolFileOffset(path, sym string) (off, size uint64, err error) {
	f, err := elf.Open(path)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) {
			return 0, 0, fmt.Errorf("%w: %s is not an ELF file (a program or shared library)", errProbeTarget, path)
		}
		return 0, 0, fmt.Errorf("%w: %w", errProbeTarget, err)
	}
	defer f.Close()
	type found struct{ value, size uint64 }
	var defined []found
	imported, data, symtab := false, false, false
	for i, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := read()
		if err != nil {
			continue
		}
		symtab = symtab || i == 0 && len(syms) > 0
		for _, s := range syms {
			if s.Name != sym {
				continue
			}
			if s.Section == elf.SHN_UNDEF || s.Value == 0 {
				imported = true
				continue
			}
			switch elf.ST_TYPE(s.Info) {
			case elf.STT_FUNC, elf.STT_GNU_IFUNC, elf.STT_NOTYPE:
			default:
				data = true
				continue
			}
			if !slices.ContainsFunc(defined, func(d found) bool { return d.value == s.Value }) {
				defined = append(defined, found{s.Value, s.Size})
			}
		}
	}
	switch {
	case len(defined) == 0 && imported:
		return 0, 0, fmt.Errorf("%w: %s calls %s from a library, which defines it: probe the library's file (ldd %s lists them)", errProbeTarget, path, sym, path)
	case len(defined) == 0 && data:
		return 0, 0, fmt.Errorf("%w: %s's symbol %s is data, not a function", errProbeTarget, path, sym)
	case len(defined) == 0 && !symtab:
		return 0, 0, fmt.Errorf("%w: %s exports no symbol %s, and has no other symbols (stripped): give the function's file offset, uprobe:%s:0xOFFSET", errProbeTarget, path, sym, path)
	case len(defined) == 0:
		return 0, 0, fmt.Errorf("%w: %s has no symbol %s (nm %s lists its symbols; a C++ name is mangled)", errProbeTarget, path, sym, path)
	case len(defined) > 1:
		var at []string
		for i, d := range defined {
			if i == maxListed {
				at = append(at, "...")
				break
			}
			if o, ok := fileOffset(f, d.value); ok {
				at = append(at, fmt.Sprintf("0x%x", o))
			}
		}
		return 0, 0, fmt.Errorf("%w: %s has %d symbols %s: give one by its file offset, uprobe:%s:0xOFFSET (%s)", errProbeTarget, path, len(defined), sym, path, strings.Join(at, ", "))
	}
	o, ok := fileOffset(f, defined[0].value)
	if !ok {
		return 0, 0, fmt.Errorf("%w: %s's symbol %s, at 0x%x, is in none of its loaded segments", errProbeTarget, path, sym, defined[0].value)
	}
	return o, defined[0].size, nil
}

// fileOffset translates addr, an address of f as linked, to the offset in f's file of its
// byte: through the PT_LOAD segment whose file bytes hold it.
func fileOffset(f *elf.File, addr uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr-p.Vaddr < p.Filesz {
			return addr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

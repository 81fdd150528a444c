package query

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/disasm"
	"github.com/stax-profiler/stax/internal/proc"
	"github.com/stax-profiler/stax/internal/store"
	"github.com/stax-profiler/stax/internal/symbol"
	"github.com/stax-profiler/stax/internal/symbol/debugfile"
	"github.com/stax-profiler/stax/internal/symbol/debuginfod"
	"github.com/stax-profiler/stax/internal/symconf"
)

// ErrNoMatch says the annotate target names no sampled function or known code.
var ErrNoMatch = errors.New("no match")

// AnnotateOptions are the flags of `stax annotate`.
type AnnotateOptions struct {
	Target string // 0xADDR or a case-insensitive substring of a function name
	Tid    uint32
	Intel  bool
}

// AnnotateResult is the answer of `stax annotate`.
type AnnotateResult struct {
	Schema     int                  `json:"schema"`
	Run        string               `json:"run"`
	Annotation *annotate.Annotation `json:"annotation"`
	Others     []Match              `json:"other_matches,omitempty"`
	Notes      []string             `json:"notes,omitempty"` // why source lines are missing
}

// Match is a function matching the target.
type Match struct {
	Func    string `json:"func"`
	Image   string `json:"image"`
	Samples uint64 `json:"samples"`
}

const (
	maxSourceFile  = 16 << 20
	maxSourceLines = 1 << 20
)

// Annotate answers `stax annotate`.
func Annotate(run *store.Run, o AnnotateOptions) (*AnnotateResult, error) {
	p := &run.Profile
	self := make(map[int32]uint64)
	for _, e := range p.Entries {
		if e.LeafFunc >= 0 && (o.Tid == 0 || e.Tid == o.Tid) {
			self[e.LeafFunc] += e.Count
		}
	}
	codes := map[uint32][]store.Code{}
	for _, c := range run.Code {
		codes[c.Frame] = append(codes[c.Frame], c)
	}
	frame := int32(-1)
	var others []Match
	if addr, ok := parseAddr(o.Target); ok {
		for _, c := range run.Code {
			if addr >= c.Start && addr < c.Start+max(c.Size, 1) {
				frame = int32(c.Frame)
				break
			}
		}
		if frame < 0 {
			return nil, fmt.Errorf("address %#x is outside any sampled function's code: %w", addr, ErrNoMatch)
		}
	} else {
		want := strings.ToLower(o.Target)
		var matches []Match
		var ids []int32
		for id, f := range p.Frames {
			if strings.Contains(strings.ToLower(f.Func), want) && self[int32(id)] > 0 {
				matches = append(matches, Match{Func: f.Func, Image: f.Image, Samples: self[int32(id)]})
				ids = append(ids, int32(id))
			}
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("no sampled function matches %q (stax top lists them): %w", o.Target, ErrNoMatch)
		}
		order := make([]int, len(matches))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return matches[order[a]].Samples > matches[order[b]].Samples })
		frame = ids[order[0]]
		for _, i := range order[1:] {
			others = append(others, matches[i])
		}
	}
	f := p.Frames[frame]
	samples := map[uint64]uint64{}
	for _, e := range p.Entries {
		if e.LeafFunc == frame && (o.Tid == 0 || e.Tid == o.Tid) {
			samples[e.Leaf] += e.Count
		}
	}
	c, err := pickCode(codes[uint32(frame)], samples)
	if err != nil {
		return nil, fmt.Errorf("annotate %s: %w", f.Func, err)
	}
	in, err := inputFor(run, c, f)
	if err != nil {
		return nil, fmt.Errorf("annotate %s: %w", f.Func, err)
	}
	in.Samples = samples
	if o.Intel {
		in.Syntax = disasm.SyntaxIntel
	}
	// Say why a source file named by the debug info is not shown, unless it is simply gone.
	var notes []string
	if read := in.Source; read != nil {
		in.Source = func(file string) ([]string, error) {
			lines, err := read(file)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				notes = append(notes, "source not shown: "+err.Error())
			}
			return lines, err
		}
	}
	a := annotate.Annotate(in)
	return &AnnotateResult{Schema: api.Schema, Run: run.Meta.ID, Annotation: a, Others: others, Notes: notes}, nil
}

// inputFor gathers what annotating code needs besides samples: its bytes, and where they
// exist its line table, call-target names and source text (kept in the run by stax save,
// else read from the image, its debug file and the source files).
func inputFor(run *store.Run, c store.Code, f agg.Frame) (annotate.Input, error) {
	code, err := codeBytes(c)
	if err != nil {
		return annotate.Input{}, err
	}
	in := annotate.Input{
		Func: f.Func, Image: f.Image, Start: c.Start, Code: code,
		Arch:   disasm.ArchFromELF(uint16(c.Arch)),
		Source: sourceReader(c, targetCreds(run.Meta)),
	}
	if len(c.Lines) > 0 {
		lines := c.Lines
		in.Lines = func(addr uint64) (string, int, []string) {
			i := sort.Search(len(lines), func(i int) bool { return lines[i].Addr > addr })
			if i == 0 {
				return "", 0, nil
			}
			l := lines[i-1]
			return l.File, l.Line, l.Inlined
		}
	}
	im := openImage(c)
	if len(c.Lines) == 0 && im != nil {
		in.Lines = dwarfLines(im, c)
	}
	in.Symbolize = symbolizer(run, c, im)
	return in, nil
}

// openImage opens the image native code came from, with its debug file, through the same
// symbol chain as a recording; nil for JIT code or an image that is gone or has changed.
func openImage(c store.Code) *symbol.Image {
	if c.Path == "" {
		return nil
	}
	var bid []byte
	fmt.Sscanf(c.BuildID, "%x", &bid)
	cache := symbol.NewCache(symconf.Options(func(string, ...any) {}))
	for _, path := range imagePaths(c) {
		if im, err := cache.OpenBuildID(path, bid); err == nil {
			return im
		}
	}
	return nil
}

// dwarfLines maps run-time addresses of native code to source lines and inline chains,
// from the image's DWARF or its separate debug file.
func dwarfLines(im *symbol.Image, c store.Code) annotate.LineFunc {
	return func(addr uint64) (string, int, []string) {
		loc := im.Locate(addr - c.Start + c.Vaddr)
		if len(loc.Frames) == 0 || loc.Frames[0].Line == 0 {
			return "", 0, nil
		}
		var chain []string
		for _, f := range loc.Frames[1:] {
			chain = append(chain, f.Func)
		}
		return loc.Frames[0].File, loc.Frames[0].Line, chain
	}
}

func imagePaths(c store.Code) []string {
	paths := []string{c.Path}
	if c.Pid > 0 {
		paths = append([]string{"/proc/" + strconv.Itoa(c.Pid) + "/root" + c.Path}, paths...)
	}
	return paths
}

func parseAddr(s string) (uint64, bool) {
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return 0, false
	}
	v, err := strconv.ParseUint(s[2:], 16, 64)
	return v, err == nil
}

// pickCode chooses, among the places a function's code was seen, the one holding most of
// its samples.
func pickCode(cs []store.Code, samples map[uint64]uint64) (store.Code, error) {
	if len(cs) == 0 {
		return store.Code{}, errors.New("its code was not located while recording")
	}
	best, bestN := -1, uint64(0)
	var lastErr string
	for i, c := range cs {
		if c.Error != "" && len(c.Bytes) == 0 && c.Path == "" {
			lastErr = c.Error
			continue
		}
		var n uint64
		for a, s := range samples {
			if a >= c.Start && a < c.Start+max(c.Size, 1) {
				n += s
			}
		}
		if best < 0 || n > bestN {
			best, bestN = i, n
		}
	}
	if best < 0 {
		return store.Code{}, fmt.Errorf("its bytes cannot be read: %s", lastErr)
	}
	return cs[best], nil
}

// codeBytes returns the function's machine code: kept in the run (JIT code), or read from
// its image file, whose build-id must still match.
func codeBytes(c store.Code) ([]byte, error) {
	if len(c.Bytes) > 0 {
		return c.Bytes, nil
	}
	if c.Path == "" {
		return nil, fmt.Errorf("its bytes cannot be read: %s", c.Error)
	}
	if c.Size == 0 || c.Size > 16<<20 {
		return nil, fmt.Errorf("its size in %s (%d bytes) is unknown or too large to annotate", c.Path, c.Size)
	}
	var lastErr error
	for _, path := range imagePaths(c) {
		b, err := readImageCode(path, c)
		if err == nil {
			return b, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func readImageCode(path string, c store.Code) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("read code from %s: malformed ELF", path)
		}
	}()
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read code: %w", err)
	}
	defer f.Close()
	if c.BuildID != "" {
		if id, err := debugfile.ReadBuildID(path); err == nil && fmt.Sprintf("%x", id) != c.BuildID {
			return nil, fmt.Errorf("read code: %s has changed since the recording (build-id differs)", path)
		}
	}
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_LOAD || c.Vaddr < prog.Vaddr || c.Vaddr+c.Size > prog.Vaddr+prog.Filesz {
			continue
		}
		b := make([]byte, c.Size)
		if _, err := prog.ReadAt(b, int64(c.Vaddr-prog.Vaddr)); err != nil && err != io.EOF {
			return nil, fmt.Errorf("read code from %s: %w", path, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("read code: %#x is not in a loadable segment of %s", c.Vaddr, path)
}

// symbolizer names call targets: other functions of the same image, or other JIT code of
// the run.
func symbolizer(run *store.Run, c store.Code, im *symbol.Image) annotate.SymbolFunc {
	return func(addr uint64) (string, bool) {
		if i := sort.Search(len(c.Symbols), func(i int) bool { return c.Symbols[i].Addr >= addr }); i < len(c.Symbols) && c.Symbols[i].Addr == addr {
			return c.Symbols[i].Name, true
		}
		for _, o := range run.Code {
			if addr >= o.Start && addr < o.Start+o.Size && len(o.Bytes) > 0 {
				return run.Profile.Frames[o.Frame].Func, true
			}
		}
		if im != nil && addr >= c.Start-c.Vaddr {
			if s, ok := im.Symbol(addr - c.Start + c.Vaddr); ok {
				return s.Name, true
			}
		}
		return "", false
	}
}

// sourceReader reads source files from disk, or, when one is missing and debuginfod is
// configured, from its /source endpoint for the image's build-id.
func sourceReader(c store.Code, who *proc.Creds) annotate.SourceFunc {
	cache := map[string][]string{}
	var client *debuginfod.Client
	var bid []byte
	fmt.Sscanf(c.BuildID, "%x", &bid)
	baked := map[string][]string{}
	for _, l := range c.Source {
		if l.Line <= 0 || l.Line > maxSourceLines {
			continue
		}
		b := baked[l.File]
		for len(b) < l.Line {
			b = append(b, "")
		}
		b[l.Line-1] = l.Text
		baked[l.File] = b
	}
	return func(file string) ([]string, error) {
		if lines, ok := cache[file]; ok {
			return lines, nil
		}
		if lines, ok := baked[file]; ok {
			return lines, nil
		}
		lines, err := readSourceFile(file, who)
		if errors.Is(err, os.ErrNotExist) && len(bid) > 0 {
			if client == nil {
				client = symconf.Debuginfod(func(string, ...any) {})
			}
			if client != nil {
				if p, ferr := client.FetchSource(context.Background(), bid, file); ferr == nil {
					lines, err = readSourceFile(p, nil)
				}
			}
		}
		if err != nil {
			return nil, err
		}
		cache[file] = lines
		return lines, nil
	}
}

// targetCreds is the recorded process's identity, if the run kept it.
func targetCreds(m store.Meta) *proc.Creds {
	if m.TargetUID == nil {
		return nil
	}
	return &proc.Creds{UID: *m.TargetUID, GIDs: m.TargetGIDs}
}

// readSourceFile reads a source file a recorded process's debug info names, as that
// process could have (see openNamedFile).
func readSourceFile(file string, who *proc.Creds) ([]string, error) {
	f, err := openNamedFile(file, who, maxSourceFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, nil
}

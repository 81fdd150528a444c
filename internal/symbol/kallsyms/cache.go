package kallsyms

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/stax-profiler/stax/internal/mapfile"
)

// Reading /proc/kallsyms makes the kernel format 100,000-200,000 lines (about 30 ms of
// system time) and parsing them costs as much again, on every run that meets a kernel
// frame. The table does not change while the kernel runs, but for modules (and BPF
// programs) loaded or unloaded, so it is saved in a binary form under the running
// kernel's key: its boot id and its modules' names, sizes and addresses.

// CacheFile is the name of the saved table in a cache directory.
const CacheFile = "kallsyms.bin"

const (
	cacheMagic = "STAXKSY1"
	entryBytes = 17 // addr 8, name 4, nlen 2, mod 2, typ 1
)

var errCache = errors.New("damaged kernel symbol cache")

// bootID and modulesPath are read for the cache key; tests point them elsewhere.
var (
	bootIDPath  = "/proc/sys/kernel/random/boot_id"
	modulesPath = "/proc/modules"
)

// LoadCached returns the table at path (usually [DefaultPath]), from dir's saved copy when
// the running kernel is the one it was saved for, else read from path and saved in dir for
// the next run. The saved copy is only used when path shows addresses (a reader denied them
// gets [ErrRestricted] from path, as [Load] gives it). A damaged or stale copy is replaced.
func LoadCached(path, dir string) (*Table, error) {
	if dir == "" {
		return Load(path)
	}
	key, ok := cacheKey(path)
	if !ok {
		return Load(path)
	}
	if t, err := mapCache(filepath.Join(dir, CacheFile), key); err == nil {
		t.cached = true
		// Used now: the cache's bound evicts the files least recently used first.
		now := time.Now()
		_ = os.Chtimes(filepath.Join(dir, CacheFile), now, now)
		return t, nil
	}
	return Reload(path, dir)
}

// mapCache reads the saved table at file by mapping it: the symbols and names stay in the
// page cache, read where a lookup needs them, instead of being copied into the heap (5 MB
// for a distribution kernel: reading and decoding them was tens of ms of every run). The
// mapping lives as long as the process. The file is replaced by renaming (save), never
// changed in place, so the mapped one stays whole.
func mapCache(file string, key []byte) (*Table, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := mapfile.Map(f, int64(len(cacheMagic))+1, 2*MaxBytes)
	if errors.Is(err, mapfile.ErrSize) {
		return nil, fmt.Errorf("read kernel symbol cache: %w", errCache)
	}
	if err != nil {
		return ReadCache(f, key)
	}
	t, err := decodeCache(data, key, true)
	if err != nil {
		mapfile.Unmap(data)
		return nil, err
	}
	return t, nil
}

// Reload reads the table at path and saves it in dir (when not "") for the next run.
func Reload(path, dir string) (*Table, error) {
	t, err := Load(path)
	if err != nil || dir == "" {
		return t, err
	}
	if key, ok := cacheKey(path); ok {
		_ = save(t, dir, filepath.Join(dir, CacheFile), key) // a run without the copy is only slower
	}
	return t, nil
}

// FromCache says whether the table was read from a saved copy: a symbol loaded since then
// (a module, a BPF program) may be missing from it.
func (t *Table) FromCache() bool { return t.cached }

// cacheKey is the running kernel's key, and whether path shows addresses at all (its first
// symbol's address is not zero).
func cacheKey(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	var head [64]byte
	n, _ := io.ReadFull(f, head[:])
	f.Close()
	addr, _, _ := bytes.Cut(head[:n], []byte(" "))
	if v, ok := parseHex(addr); !ok || v == 0 {
		return nil, false
	}
	boot, err := os.ReadFile(bootIDPath)
	if err != nil || len(boot) == 0 {
		return nil, false
	}
	h := sha256.New()
	h.Write(boot)
	if mods, err := os.ReadFile(modulesPath); err == nil {
		// Each module's name, size and address: its use count changes as it is used.
		for line := range bytes.Lines(mods) {
			fs := bytes.Fields(line)
			for _, i := range []int{0, 1, 5} {
				if i < len(fs) {
					h.Write(fs[i])
				}
				h.Write([]byte{0})
			}
		}
	}
	return h.Sum(nil), true
}

// save writes t to file atomically (readable by its owner only).
func save(t *Table, dir, file string, key []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".kallsyms-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := WriteCache(tmp, t, key); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// WriteCache writes t in the cache format under key.
func WriteCache(w io.Writer, t *Table, key []byte) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var b []byte
	b = append(b, cacheMagic...)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendUvarint(b, uint64(len(t.modules)))
	for _, m := range t.modules {
		b = binary.AppendUvarint(b, uint64(len(m)))
		b = append(b, m...)
	}
	b = binary.AppendUvarint(b, uint64(len(t.names)))
	for _, s := range t.names {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	b = binary.AppendUvarint(b, uint64(t.n))
	bw.Write(b)
	for _, s := range t.names {
		bw.WriteString(s)
	}
	var e [entryBytes]byte
	for i := range t.n {
		en := t.entryAt(i)
		binary.LittleEndian.PutUint64(e[0:], en.addr)
		binary.LittleEndian.PutUint32(e[8:], en.name)
		binary.LittleEndian.PutUint16(e[12:], en.nlen)
		binary.LittleEndian.PutUint16(e[14:], en.mod)
		e[16] = en.typ
		bw.Write(e[:])
	}
	return bw.Flush()
}

// ReadCache reads a table written by WriteCache under key. A copy under another key is an
// error, as is any damage: sizes are bounded, every name and module index is checked and
// the addresses must ascend.
func ReadCache(r io.Reader, key []byte) (*Table, error) {
	size := 0
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Size() <= 2*MaxBytes {
			size = int(fi.Size())
		}
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(r, 2*MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read kernel symbol cache: %w", err)
	}
	return decodeCache(buf.Bytes(), key, false)
}

// decodeCache decodes a table written by WriteCache from data, which the table keeps
// (names, and with raw its symbols too, are read from it where they are).
func decodeCache(data, key []byte, raw bool) (*Table, error) {
	if len(data) > 2*MaxBytes || !bytes.HasPrefix(data, []byte(cacheMagic)) {
		return nil, fmt.Errorf("read kernel symbol cache: %w", errCache)
	}
	d := data[len(cacheMagic):]
	bad := false
	uv := func(limit uint64) int {
		v, n := binary.Uvarint(d)
		if n <= 0 || v > limit {
			bad = true
			return 0
		}
		d = d[n:]
		return int(v)
	}
	take := func(n int) []byte {
		if bad || n > len(d) {
			bad = true
			return nil
		}
		b := d[:n]
		d = d[n:]
		return b
	}
	if k := take(uv(1 << 10)); bad || !bytes.Equal(k, key) {
		return nil, fmt.Errorf("read kernel symbol cache: saved for another kernel")
	}
	t := &Table{}
	nm := uv(0x10000)
	for range nm {
		t.modules = append(t.modules, string(take(uv(MaxLineLen))))
	}
	if bad || nm == 0 || t.modules[0] != "" {
		return nil, fmt.Errorf("read kernel symbol cache: %w", errCache)
	}
	nn := uv(MaxBytes / nameChunk * 2)
	sizes := make([]int, 0, nn)
	for range nn {
		sizes = append(sizes, uv(nameChunk))
	}
	t.n = uv(MaxLines)
	total := 0
	for _, s := range sizes {
		total += s
	}
	var names string
	if b := take(total); len(b) > 0 {
		// The names stay in the buffer read, which nothing else holds or changes.
		names = unsafe.String(&b[0], len(b))
	}
	for _, s := range sizes {
		if bad {
			break
		}
		t.names = append(t.names, names[:s])
		names = names[s:]
	}
	ents := take(t.n * entryBytes)
	if bad || len(d) != 0 {
		return nil, fmt.Errorf("read kernel symbol cache: %w", errCache)
	}
	if raw {
		t.raw = ents
	} else {
		for i := 0; i < t.n; i += entChunk {
			t.ents = append(t.ents, make([]entry, 0, min(entChunk, t.n-i)))
		}
	}
	var prev uint64
	for i := range t.n {
		en := decodeEntry(ents[i*entryBytes : (i+1)*entryBytes])
		chunk, off := int(en.name>>16), int(en.name&0xffff)
		if chunk >= len(t.names) || off+int(en.nlen) > len(t.names[chunk]) || int(en.mod) >= len(t.modules) ||
			(i > 0 && en.addr <= prev) || !textType(en.typ) {
			return nil, fmt.Errorf("read kernel symbol cache: %w", errCache)
		}
		prev = en.addr
		if !raw {
			c := &t.ents[i>>entShift]
			*c = append(*c, en)
		}
	}
	return t, nil
}

func decodeEntry(e []byte) entry {
	return entry{
		addr: binary.LittleEndian.Uint64(e[0:]),
		name: binary.LittleEndian.Uint32(e[8:]),
		nlen: binary.LittleEndian.Uint16(e[12:]),
		mod:  binary.LittleEndian.Uint16(e[14:]),
		typ:  e[16],
	}
}

func textType(c byte) bool { return c == 't' || c == 'T' || c == 'w' || c == 'W' }

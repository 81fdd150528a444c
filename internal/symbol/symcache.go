package symbol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stax-profiler/stax/internal/mapfile"
	"github.com/stax-profiler/stax/internal/symbol/elfsym"
)

// Parsing an image's symbol tables (and those of its separate debug file and its
// .gnu_debugdata), folding and sorting them costs tens of ms for a library like libc, on
// every run. The finished table of an image with a build-id is kept in the table cache
// as <build-id>.sym, in elfsym's saved form, with a record of what it was made from: the
// image file (its size, modification time, device and inode), whether its .gnu_debugdata
// was merged, and which separate debug file was merged (the same, and its path), if any.
// A later run uses it when the image file is the same one (then so is its
// .gnu_debugdata) and the search for a debug file (which only stats files and reads
// build-id notes) gives the same file, unchanged; else it parses the image as before and
// saves the table again. Go images are not kept (their .gopclntab tables are read from
// the file).

// symCacheVersion is the version of the record in a saved table.
const symCacheVersion = 1

// Bits of symMeta.flags.
const (
	metaMini       = 1 << iota // .gnu_debugdata was merged
	metaOwnDWARF               // the image (with .gnu_debugdata) has DWARF: no debug file was sought
	metaDebug                  // a separate debug file was merged
	metaDebugDWARF             // and it has DWARF
	metaFetched                // and it was fetched (by build-id, from the Fetcher)
	metaMask       = 1<<iota - 1
)

// sameFile says whether k and o are the same file, unchanged, wherever each was found: the
// recorder reaches a process's files by paths that change from run to run
// (/proc/PID/root/..., /proc/self/fd/N).
func (k fileKey) sameFile(o fileKey) bool {
	return k.size == o.size && k.mtime == o.mtime && k.dev == o.dev && k.inode == o.inode
}

// symMeta is the record of what a saved table was made from.
type symMeta struct {
	flags uint64
	image fileKey
	debug fileKey // when flags has metaDebug
}

func (m symMeta) has(f uint64) bool { return m.flags&f != 0 }

func (m symMeta) encode() []byte {
	b := binary.AppendUvarint(nil, symCacheVersion)
	b = binary.AppendUvarint(b, m.flags)
	for _, s := range []fileKey{m.image, m.debug} {
		b = binary.AppendUvarint(b, uint64(len(s.path)))
		b = append(b, s.path...)
		b = binary.AppendUvarint(b, uint64(s.size))
		b = binary.AppendVarint(b, s.mtime)
		b = binary.AppendUvarint(b, s.dev)
		b = binary.AppendUvarint(b, s.inode)
	}
	return b
}

var errSymMeta = errors.New("damaged record in symbol table cache")

func decodeSymMeta(b []byte) (symMeta, error) {
	bad := false
	uv := func(limit uint64) uint64 {
		v, n := binary.Uvarint(b)
		if bad || n <= 0 || v > limit {
			bad = true
			return 0
		}
		b = b[n:]
		return v
	}
	var m symMeta
	if uv(1<<16) != symCacheVersion {
		return m, fmt.Errorf("read symbol table cache: %w", errSymMeta)
	}
	m.flags = uv(metaMask)
	for _, s := range []*fileKey{&m.image, &m.debug} {
		n := uv(elfsym.MaxCacheMeta)
		if bad || n > uint64(len(b)) {
			return m, fmt.Errorf("read symbol table cache: %w", errSymMeta)
		}
		s.path, b = string(b[:n]), b[n:]
		s.size = int64(uv(1<<63 - 1))
		v, k := binary.Varint(b)
		if bad || k <= 0 {
			return m, fmt.Errorf("read symbol table cache: %w", errSymMeta)
		}
		s.mtime, b = v, b[k:]
		s.dev = uv(^uint64(0))
		s.inode = uv(^uint64(0))
	}
	if bad || len(b) != 0 || m.image.path == "" || m.has(metaDebug) != (m.debug.path != "") ||
		(!m.has(metaDebug) && m.flags&(metaDebugDWARF|metaFetched) != 0) {
		return m, fmt.Errorf("read symbol table cache: %w", errSymMeta)
	}
	return m, nil
}

// symCachePath is where the finished symbol table of the image with build-id id is kept,
// "" without a cache or build-id.
func (c *Cache) symCachePath(id []byte) string {
	if c.opts.TableCache == "" || len(id) == 0 {
		return ""
	}
	return filepath.Join(c.opts.TableCache, fmt.Sprintf("%x.sym", id))
}

// savedTable is a table read from the cache.
type savedTable struct {
	el   *elfsym.Image
	meta symMeta
	data []byte // the mapping el reads
}

// drop unmaps a table that is not used: nothing of it may have been handed out.
func (st *savedTable) drop() { mapfile.Unmap(st.data) }

// readSymCache returns the saved table of the image at path with build-id id, when there
// is one for that build-id made from this very file; nil otherwise.
func (c *Cache) readSymCache(path string, id []byte) *savedTable {
	p := c.symCachePath(id)
	if p == "" {
		return nil
	}
	now, err := statKey(path)
	if err != nil {
		return nil
	}
	data, err := mapFile(p)
	if err != nil {
		return nil
	}
	st, err := decodeSymCache(data, path)
	if err != nil || !bytes.Equal(st.el.BuildID, id) || !st.meta.image.sameFile(now) {
		mapfile.Unmap(data)
		return nil
	}
	// Once the table is used, its symbols' names, strings in the mapping, are handed out
	// by lookups to be kept for good: the mapping must then never be unmapped. The file is
	// replaced by renaming, never changed in place, so the mapped copy stays whole.
	st.data = data
	markUsed(p)
	return st
}

// decodeSymCache decodes a saved table and its record.
func decodeSymCache(data []byte, path string) (*savedTable, error) {
	el, meta, err := elfsym.DecodeCache(data, path)
	if err != nil {
		return nil, err
	}
	if el.IsGo {
		return nil, fmt.Errorf("read symbol table cache of %s: %w", path, elfsym.ErrCache)
	}
	m, err := decodeSymMeta(meta)
	if err != nil {
		return nil, err
	}
	return &savedTable{el: el, meta: m}, nil
}

// mapFile maps the file at p read-only.
func mapFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := mapfile.Map(f, 1, elfsym.MaxCacheBytes)
	if errors.Is(err, mapfile.ErrSize) {
		return nil, fmt.Errorf("read symbol table cache %s: %w", p, elfsym.ErrCache)
	}
	return data, err
}

// saveSymCache writes el's table with its record m to the cache, atomically and readable
// by its owner only. A run without it is only slower, so errors are dropped.
func (c *Cache) saveSymCache(el *elfsym.Image, m symMeta) {
	p := c.symCachePath(el.BuildID)
	if p == "" || el.IsGo {
		return
	}
	if os.MkdirAll(filepath.Dir(p), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".sym-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	if err := elfsym.WriteCache(tmp, el, m.encode()); err != nil {
		tmp.Close()
		return
	}
	if tmp.Close() != nil {
		return
	}
	os.Rename(tmp.Name(), p)
}

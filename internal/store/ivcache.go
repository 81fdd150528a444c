package store

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"sync"

	"github.com/stax-profiler/stax/internal/agg"
)

// A recording's intervals off CPU only grow, and its run file is rewritten whole at each
// new base (delta.go): compressing the whole intervals section again each time cost a
// recorder that follows a thread switching 200,000 times a second half of its CPU. An IntervalCache keeps
// the section compressed in blocks of intervalBlock intervals from one save to the next, each
// block a gzip member of its own (a gzip stream may hold several, read as one), so that a
// save compresses only the blocks whose bytes it has not compressed before. The file is the
// same either way.
type IntervalCache struct {
	mu     sync.Mutex
	blocks []intervalBlockZ
	zw     *gzip.Writer
	// Reused and Compressed count the blocks a save took from the cache or compressed.
	Reused, Compressed uint64
}

type intervalBlockZ struct {
	sum uint32 // CRC-32C of the block's uncompressed bytes
	n   int    // their length
	z   []byte // the block as a gzip member
}

// intervalBlock is how many intervals a cached block holds: some 600 KiB of section.
const intervalBlock = 1 << 16

// appendIntervalsMarked is appendIntervals, also appending to marks the offset in b at
// which each whole block of intervalBlock intervals ends; head is where the first begins.
func appendIntervalsMarked(b []byte, marks []int, ivs []agg.Interval) (_ []byte, head int, _ []int) {
	if len(ivs) == 0 {
		return b, len(b), marks
	}
	b = append(b, ivalsMagic...)
	b = binary.AppendUvarint(b, uint64(len(ivs)))
	head = len(b)
	var prev uint64
	for i := 0; i < len(ivs); i += intervalBlock {
		end := min(i+intervalBlock, len(ivs))
		b = appendIntervalBody(b, ivs[i:end], &prev)
		if end-i == intervalBlock {
			marks = append(marks, len(b))
		}
	}
	return b, head, marks
}

// writeIntervals writes the intervals section iv through zw into w: the part before the
// first block and after the last whole one through zw, the whole blocks as the cache's
// members (zw's member is closed before them and a new one begun after).
func (c *IntervalCache) writeIntervals(w io.Writer, zw *gzip.Writer, iv []byte, head int, marks []int) error {
	if c == nil || len(marks) == 0 {
		_, err := zw.Write(iv)
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := zw.Write(iv[:head]); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	lo := head
	for i, hi := range marks {
		raw := iv[lo:hi]
		sum := crc32.Checksum(raw, castagnoli)
		if i < len(c.blocks) && c.blocks[i].sum == sum && c.blocks[i].n == len(raw) {
			c.Reused++
		} else {
			z, err := c.compress(raw)
			if err != nil {
				return err
			}
			b := intervalBlockZ{sum: sum, n: len(raw), z: z}
			if i < len(c.blocks) {
				c.blocks[i] = b
			} else {
				c.blocks = append(c.blocks, b)
			}
			c.Compressed++
		}
		if _, err := w.Write(c.blocks[i].z); err != nil {
			return err
		}
		lo = hi
	}
	c.blocks = c.blocks[:len(marks)]
	zw.Reset(w)
	_, err := zw.Write(iv[lo:])
	return err
}

// compress is raw as a gzip member.
func (c *IntervalCache) compress(raw []byte) ([]byte, error) {
	var out bytes.Buffer
	if c.zw == nil {
		c.zw, _ = gzip.NewWriterLevel(&out, gzip.BestSpeed)
	} else {
		c.zw.Reset(&out)
	}
	if _, err := c.zw.Write(raw); err != nil {
		return nil, err
	}
	if err := c.zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Package demangle turns C++ (Itanium ABI) and Rust (legacy and v0) symbol
// names into readable form for stax. Results are memoized in a
// concurrency-safe cache and the underlying demangler is guarded so that a
// malformed name can never crash the profiler: on any failure the input is
// returned unchanged.
package demangle

import (
	"strings"
	"sync"
	"sync/atomic"

	ild "github.com/ianlancetaylor/demangle"
)

// MaxNameLen bounds the length of names handed to the demangler. Longer
// names are returned unchanged.
const MaxNameLen = 16 << 10

// DefaultCacheEntries is the number of results a [Cache] keeps by default.
const DefaultCacheEntries = 1 << 20

// Cache memoizes demangled names. The zero value is not usable; create one
// with [NewCache]. A Cache is safe for concurrent use.
type Cache struct {
	m     sync.Map // string -> string
	n     atomic.Int64
	limit int64
	opts  []ild.Option
}

// Option configures a Cache.
type Option func(*Cache)

// WithoutParams drops function parameter lists from C++ names
// ("ns::f(int)" becomes "ns::f").
func WithoutParams() Option {
	return func(c *Cache) { c.opts = append(c.opts, ild.NoParams) }
}

// WithLimit bounds the number of memoized results; further names are
// demangled without being stored.
func WithLimit(n int) Option {
	return func(c *Cache) { c.limit = int64(n) }
}

// NewCache returns an empty cache.
func NewCache(opts ...Option) *Cache {
	c := &Cache{limit: DefaultCacheEntries}
	for _, o := range opts {
		o(c)
	}
	return c
}

var defaultCache = NewCache()

// Demangle demangles name using a process-wide cache. Names that are not
// mangled are returned unchanged.
func Demangle(name string) string { return defaultCache.Demangle(name) }

// IsMangled reports whether name looks like a C++ or Rust mangled name.
func IsMangled(name string) bool {
	return strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R") ||
		strings.HasPrefix(name, "__Z") || strings.HasPrefix(name, "__R")
}

// Demangle demangles name, consulting and filling the cache.
func (c *Cache) Demangle(name string) string {
	if !IsMangled(name) || len(name) > MaxNameLen {
		return name
	}
	if v, ok := c.m.Load(name); ok {
		return v.(string)
	}
	out := demangleOne(name, c.opts)
	if c.n.Load() < c.limit {
		if _, loaded := c.m.LoadOrStore(name, out); !loaded {
			c.n.Add(1)
		}
	}
	return out
}

// Len reports the number of memoized names.
func (c *Cache) Len() int { return int(c.n.Load()) }

func demangleOne(name string, opts []ild.Option) (out string) {
	defer func() {
		if recover() != nil {
			out = name
		}
	}()
	s, err := ild.ToString(name, opts...)
	if err != nil || s == "" {
		// Some toolchains add an extra leading underscore.
		if strings.HasPrefix(name, "__") {
			if s2, err2 := ild.ToString(name[1:], opts...); err2 == nil && s2 != "" {
				return s2
			}
		}
		return name
	}
	return s
}

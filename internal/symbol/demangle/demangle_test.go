package demangle

import (
	"fmt"
	"sync"
	"testing"
)

func TestDemangle(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain C", "memcpy", "memcpy"},
		{"go", "main.main", "main.main"},
		{"cxx", "_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)"},
		{"cxx clone cold", "_Z3foov.cold", "foo() [clone .cold]"},
		{"cxx clone isra", "_ZL5scalei.isra.0", "scale(int) [clone .isra.0]"},
		{"rust legacy hash dropped", "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"},
		{"rust legacy escapes", "_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h9d3f1c1e2a3b4c5dE", "std::rt::lang_start::{{closure}}"},
		{"rust v0", "_RNvCs1234_7mycrate3foo", "mycrate::foo"},
		{"invalid", "_Zxyz", "_Zxyz"},
		{"empty", "", ""},
		{"just prefix", "_R", "_R"},
	}
	c := NewCache()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // second call hits the cache
				if got := c.Demangle(tt.in); got != tt.want {
					t.Fatalf("Demangle(%q) = %q, want %q", tt.in, got, tt.want)
				}
			}
		})
	}
}

func TestWithoutParams(t *testing.T) {
	c := NewCache(WithoutParams())
	if got, want := c.Demangle("_ZN2ns1fEi"), "ns::f"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestLimit(t *testing.T) {
	c := NewCache(WithLimit(2))
	for i := range 10 {
		c.Demangle(fmt.Sprintf("_Z%dfv", 1+i%9))
	}
	if c.Len() > 2 {
		t.Fatalf("cache holds %d entries, limit 2", c.Len())
	}
}

func TestConcurrent(t *testing.T) {
	c := NewCache()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				name := fmt.Sprintf("_ZN2ns%d%sEv", len(fmt.Sprint("f", (i+j)%17)), fmt.Sprint("f", (i+j)%17))
				if got := c.Demangle(name); got == name {
					t.Errorf("not demangled: %q", name)
				}
			}
		})
	}
	wg.Wait()
}

func FuzzDemangle(f *testing.F) {
	for _, s := range []string{"_Z3foov", "_ZN4core3fmt5write17h0123456789abcdefE", "_RNvCs1234_7mycrate3foo", "_Z3foov.cold", "main.main"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := NewCache()
		out := c.Demangle(s)
		if !IsMangled(s) && out != s {
			t.Fatalf("unmangled name changed: %q -> %q", s, out)
		}
	})
}

func BenchmarkDemangleCached(b *testing.B) {
	c := NewCache()
	b.ReportAllocs()
	for b.Loop() {
		c.Demangle("_ZNSt6vectorIiSaIiEE9push_backERKi")
	}
}

func BenchmarkDemangleUncached(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		demangleOne("_ZNSt6vectorIiSaIiEE9push_backERKi", nil)
	}
}

package symbol_test

import (
	"fmt"

	"github.com/stax-profiler/stax/internal/symbol"
)

// A profiler resolves a user-space sample from the mapping that contains
// it (perf MMAP2: start, length, page offset).
func ExampleCache_Resolve() {
	cache := symbol.NewCache(symbol.Options{})
	m := symbol.Mapping{Start: 0x7f3a12428000, Len: 0x188000, Pgoff: 0x26000}
	loc, err := cache.Resolve("/lib/x86_64-linux-gnu/libc.so.6", m, 0x7f3a12441234)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range loc.Frames { // innermost first
		fmt.Printf("%s %s:%d inlined=%v\n", f.Func, f.File, f.Line, f.Inlined)
	}
	fmt.Printf("in %s at %#x+%#x\n", loc.Symbol.Name, loc.Symbol.Start, loc.VAddr-loc.Symbol.Start)
}

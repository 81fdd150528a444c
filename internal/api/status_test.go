package api

import (
	"reflect"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// TestStatusCountsUnsymbolizedCode: samples whose leaf is native code no symbol names (a
// function range, or an address no range holds) are unnamed, and counted by image.
func TestStatusCountsUnsymbolizedCode(t *testing.T) {
	frames := []agg.Frame{
		{Func: "main", Image: "app", Kind: agg.KindUser},
		{Func: "liblzma.so.5+0x15b40", Image: "liblzma.so.5", Kind: agg.KindUser},
		{Func: "liblzma.so.5+0x2f1", Image: "liblzma.so.5", Kind: agg.KindUnknown},
		{Func: "[vdso]+0x780", Image: "[vdso]", Kind: agg.KindUser},
		{Func: "[unknown] 0x10", Image: "[unknown]", Kind: agg.KindUnknown},
		{Func: "[unknown] 0x7f0000001000", Image: "[anon]", Kind: agg.KindJIT},
	}
	run := &store.Run{Profile: agg.Profile{Frames: frames}}
	for i, n := range []uint64{1000, 300, 5, 40, 7, 2} {
		run.Profile.Stacks = append(run.Profile.Stacks, []uint32{uint32(i), 0})
		run.Profile.Entries = append(run.Profile.Entries, agg.Entry{Stack: uint32(i), Count: n})
	}
	run.Profile.LocateFrameStacks()
	st := StatusOf(run)
	want := []ImageSamples{{Image: "liblzma.so.5", Samples: 305}, {Image: "[vdso]", Samples: 40}}
	if !reflect.DeepEqual(st.Unsymbolized, want) {
		t.Errorf("unsymbolized %+v, want %+v", st.Unsymbolized, want)
	}
	if st.UnknownSamples != 300+5+40+7+2 {
		t.Errorf("%d unknown samples, want %d", st.UnknownSamples, 300+5+40+7+2)
	}
}

package agg

import "testing"

// TestAddWeightBound: past its bound, a run refuses new stacks and keys, and keeps
// counting those it has.
func TestAddWeightBound(t *testing.T) {
	r := NewRun()
	a, b := []uint64{1, 2, 3}, []uint64{4, 5, 6}
	if !r.AddWeight(1, 1, 0, 0, a, 10, 200) {
		t.Fatal("the first stack was refused")
	}
	if r.AddWeight(1, 1, 0, 0, b, 10, 1) {
		t.Error("a new stack past the bound was counted")
	}
	if r.AddWeight(1, 2, 0, 0, a, 10, 1) {
		t.Error("a new key past the bound was counted")
	}
	if !r.AddWeight(1, 1, 0, 0, a, 5, 1) {
		t.Error("a known key past the bound was refused")
	}
	if got := r.Samples(); got != 15 {
		t.Errorf("%d ns counted, want 15", got)
	}
}

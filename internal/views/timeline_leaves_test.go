package views

import "testing"

// Samples out of time order are counted all the same, in their own bucket.
func TestBucketLeavesOutOfOrder(t *testing.T) {
	var l bucketLeaves
	a, b := l.index(7), l.index(9)
	for _, s := range []struct {
		bucket int
		leaf   int32
	}{{0, a}, {0, b}, {0, a}, {2, b}, {1, a}, {0, b}, {2, b}, {3, a}} {
		l.add(s.bucket, s.leaf)
	}
	l.flush()
	got := map[[2]int]uint64{}
	l.each(func(bucket int, frame uint32, n uint64) {
		if got[[2]int{bucket, int(frame)}] != 0 {
			t.Errorf("bucket %d, frame %d given twice", bucket, frame)
		}
		got[[2]int{bucket, int(frame)}] = n
	})
	want := map[[2]int]uint64{{0, 7}: 2, {0, 9}: 2, {1, 7}: 1, {2, 9}: 2, {3, 7}: 1}
	if len(got) != len(want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("bucket %d, frame %d: %d, want %d", k[0], k[1], got[k], n)
		}
		if c := l.count(k[0], uint32(k[1])); c != n {
			t.Errorf("count(%d, %d) = %d, want %d", k[0], k[1], c, n)
		}
	}
	if c := l.count(1, 9); c != 0 {
		t.Errorf("count(1, 9) = %d, want 0", c)
	}
}

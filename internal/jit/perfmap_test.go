package jit

import (
	"fmt"
	"strings"
	"testing"
)

func TestParsePerfMapLine(t *testing.T) {
	tests := []struct {
		in   string
		want PerfMapEntry
		err  bool
	}{
		{"7f00 10 foo", PerfMapEntry{0x7f00, 0x10, "foo"}, false},
		{"0x7f00 0x10 foo", PerfMapEntry{0x7f00, 0x10, "foo"}, false},
		{"7F00 1A Foo::bar(int, char)", PerfMapEntry{0x7f00, 0x1a, "Foo::bar(int, char)"}, false},
		{"7f00 10 LazyCompile:*f /a b.js:1  \r", PerfMapEntry{0x7f00, 0x10, "LazyCompile:*f /a b.js:1"}, false},
		{"  7f00\t10\tname with\ttab", PerfMapEntry{0x7f00, 0x10, "name with\ttab"}, false},
		{"7f00 10", PerfMapEntry{}, true},
		{"7f00", PerfMapEntry{}, true},
		{"", PerfMapEntry{}, true},
		{"zz 10 foo", PerfMapEntry{}, true},
		{"7f00 -1 foo", PerfMapEntry{}, true},
		{"0x 10 foo", PerfMapEntry{}, true},
		{"11111111111111111 10 foo", PerfMapEntry{}, true},
		{"ffffffffffffffff 10 wraps", PerfMapEntry{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePerfMapLine([]byte(tt.in))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParsePerfMap(t *testing.T) {
	long := strings.Repeat("x", MaxPerfMapLine+1)
	tests := []struct {
		name     string
		in       string
		entries  int
		consumed int
		bad      int
	}{
		{"two lines", "1 2 a\n3 4 b\n", 2, 12, 0},
		{"partial last", "1 2 a\n3 4 b", 1, 6, 0},
		{"blank and bad", "\n1 2 a\nnope\r\n\n", 1, 14, 1},
		{"crlf", "1 2 a\r\n", 1, 7, 0},
		{"long line", "1 2 " + long + "\n5 6 c\n", 1, len(long) + 11, 1},
		{"long partial", "1 2 a\n" + long, 1, len(long) + 6, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, n, bad := ParsePerfMap([]byte(tt.in), nil)
			if len(es) != tt.entries || n != tt.consumed || bad != tt.bad {
				t.Errorf("got %d entries, consumed %d, bad %d; want %d, %d, %d", len(es), n, bad, tt.entries, tt.consumed, tt.bad)
			}
		})
	}
}

func BenchmarkParsePerfMap(b *testing.B) {
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, "%x %x LazyCompile:*handler%d /srv/app/routes/index.js:%d\n", 0x7f0000000000+i*256, 200, i, i)
	}
	buf := []byte(sb.String())
	es := make([]PerfMapEntry, 0, 10000)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		es, _, _ = ParsePerfMap(buf, es[:0])
	}
}

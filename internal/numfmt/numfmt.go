// Package numfmt formats numbers for stax's text output.
package numfmt

import "strconv"

// Commas formats n with thousands separators: 1234567 is "1,234,567".
func Commas(n uint64) string {
	s := strconv.FormatUint(n, 10)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

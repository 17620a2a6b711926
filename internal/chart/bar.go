// Package chart draws small charts for rebound's tools: horizontal bars for
// a terminal and histograms as standalone SVG documents a browser shows.
//
// It knows nothing about retry policies: callers hand it numbers and labels.
// Everything it writes is deterministic for the same input, so its output
// can be compared byte for byte in tests.
package chart

import (
	"math"
	"strings"
)

// eighths are the Unicode block elements from one eighth of a cell to a full
// cell, so a bar resolves to 1/8 of a character.
var eighths = [...]string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉", "█"}

// Bar returns a horizontal bar for v on a scale where max fills width cells.
// With ascii false the bar is drawn in Unicode block elements at a resolution
// of one eighth of a cell; with ascii true it is drawn in '#' at whole cells.
//
// Values are clamped to [0, max]. Any positive value draws at least the
// smallest mark, so a bucket with one job is never mistaken for an empty one;
// zero, negative and NaN values, and a non-positive max, draw nothing.
func Bar(v, max float64, width int, ascii bool) string {
	if !(v > 0) || !(max > 0) || width <= 0 {
		return ""
	}
	frac := math.Min(v/max, 1)
	if ascii {
		n := max1(int(math.Round(frac * float64(width))))
		return strings.Repeat("#", n)
	}
	n := max1(int(math.Round(frac * float64(width) * 8)))
	return strings.Repeat(eighths[8], n/8) + eighths[n%8]
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

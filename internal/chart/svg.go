package chart

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Histogram is a figure of one or more panels of bars over the same buckets,
// stacked top to bottom and drawn on one shared y scale, so a spike in one
// panel and a spread in another compare at a glance.
type Histogram struct {
	// Title is the figure's heading.
	Title string
	// XLabel names the bucket axis, e.g. "fire time after the failure".
	XLabel string
	// YLabel names the value axis, e.g. "jobs per 20ms".
	YLabel string
	// Edges labels the bucket edges, left to right: bucket i spans
	// Edges[i] to Edges[i+1], so there is one more edge than buckets.
	Edges []string
	// Panels are the histograms, top to bottom. Each has one value per bucket.
	Panels []Panel
}

// Panel is one histogram of a [Histogram].
type Panel struct {
	// Title is the panel's heading.
	Title string
	// Counts holds one non-negative value per bucket.
	Counts []float64
	// Color is the bars' CSS fill colour; empty picks one from a palette
	// by the panel's position.
	Color string
	// GuideLabel, when not empty, draws a dashed horizontal line across the
	// panel at value Guide (such as the mean), labelled GuideLabel.
	GuideLabel string
	// Guide is the value of the guide line.
	Guide float64
}

var palette = [...]string{"#c0392b", "#2471a3", "#1e8449", "#7d3c98"}

// Layout of the figure, in SVG user units (pixels at 100%).
const (
	figWidth     = 880
	marginLeft   = 84
	marginRight  = 28
	figTitleH    = 44
	panelTitleH  = 26
	plotHeight   = 170
	axisLabelsH  = 44
	panelGap     = 14
	panelHeight  = panelTitleH + plotHeight + axisLabelsH + panelGap
	plotWidth    = figWidth - marginLeft - marginRight
	minTickSpace = 84 // least horizontal room for one x tick label
)

// WriteSVG writes h as a standalone SVG 1.1 document: an XML declaration, an
// svg root in the SVG namespace with a viewBox, and for every panel a group
// (class "panel") holding its axes, tick labels and one rect per bucket
// (class "bar", zero height for an empty bucket) whose title child reads
// "EDGE–EDGE: COUNT", which browsers show on hover.
//
// It returns an error, writing nothing, if h has no panels or edges, if a
// panel's bucket count does not match the edges, or if a count is negative
// or not finite; otherwise it returns the first write error.
func (h Histogram) WriteSVG(w io.Writer) error {
	if err := h.validate(); err != nil {
		return err
	}
	nb := len(h.Edges) - 1
	peak := 0.0
	for _, p := range h.Panels {
		for _, c := range p.Counts {
			peak = math.Max(peak, c)
		}
	}
	step, top := yScale(peak)
	height := figTitleH + len(h.Panels)*panelHeight

	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		figWidth, height, figWidth, height)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(h.Title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", figWidth, height)
	fmt.Fprintf(&b, `<text class="title" x="%d" y="28" font-size="17" font-weight="600" fill="#1b1b1b">%s</text>`+"\n", marginLeft, esc(h.Title))

	barW := float64(plotWidth) / float64(nb)
	inset := 0.0
	if barW >= 4 {
		inset = 1
	}
	every := labelEvery(nb, plotWidth/minTickSpace)

	for pi, p := range h.Panels {
		color := p.Color
		if color == "" {
			color = palette[pi%len(palette)]
		}
		y0 := float64(figTitleH + pi*panelHeight)
		plotTop := y0 + panelTitleH
		plotBottom := plotTop + plotHeight
		fmt.Fprintf(&b, `<g class="panel" id="panel-%d">`+"\n", pi)
		fmt.Fprintf(&b, `<text class="panel-title" x="%d" y="%s" font-size="13" font-weight="600" fill="#1b1b1b">%s</text>`+"\n",
			marginLeft, num(y0+17), esc(p.Title))

		// Horizontal grid lines and y tick labels.
		for v := 0.0; v <= top+step/2; v += step {
			y := plotBottom - v/top*plotHeight
			fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e3e3e3"/>`+"\n", marginLeft, num(y), marginLeft+plotWidth, num(y))
			fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" fill="#444">%s</text>`+"\n", marginLeft-6, num(y+4), num(v))
		}

		// Bars.
		for i, c := range p.Counts {
			bh := c / top * plotHeight
			x := float64(marginLeft) + float64(i)*barW + inset
			fmt.Fprintf(&b, `<rect class="bar" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s–%s: %s</title></rect>`+"\n",
				num(x), num(plotBottom-bh), num(math.Max(barW-2*inset, 0.5)), num(bh), esc(color),
				esc(h.Edges[i]), esc(h.Edges[i+1]), num(c))
		}

		if p.GuideLabel != "" {
			y := plotBottom - math.Min(p.Guide, top)/top*plotHeight
			fmt.Fprintf(&b, `<line class="guide" x1="%d" y1="%s" x2="%d" y2="%s" stroke="#1b1b1b" stroke-dasharray="5 4"/>`+"\n",
				marginLeft, num(y), marginLeft+plotWidth, num(y))
			fmt.Fprintf(&b, `<text class="guide-label" x="%d" y="%s" text-anchor="end" fill="#1b1b1b">%s</text>`+"\n",
				marginLeft+plotWidth, num(y-4), esc(p.GuideLabel))
		}

		// Axes, x ticks and their labels.
		fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%s" x2="%d" y2="%s" stroke="#1b1b1b"/>`+"\n", marginLeft, num(plotTop), marginLeft, num(plotBottom))
		fmt.Fprintf(&b, `<line class="axis" x1="%d" y1="%s" x2="%d" y2="%s" stroke="#1b1b1b"/>`+"\n", marginLeft, num(plotBottom), marginLeft+plotWidth, num(plotBottom))
		for i, e := range h.Edges {
			x := float64(marginLeft) + float64(i)*barW
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#1b1b1b"/>`+"\n", num(x), num(plotBottom), num(x), num(plotBottom+4))
			if i%every == 0 {
				fmt.Fprintf(&b, `<text class="tick" x="%s" y="%s" text-anchor="middle" fill="#444">%s</text>`+"\n", num(x), num(plotBottom+17), esc(e))
			}
		}
		fmt.Fprintf(&b, `<text class="xlabel" x="%s" y="%s" text-anchor="middle" fill="#1b1b1b">%s</text>`+"\n",
			num(float64(marginLeft)+plotWidth/2.0), num(plotBottom+36), esc(h.XLabel))
		fmt.Fprintf(&b, `<text class="ylabel" transform="translate(%d %s) rotate(-90)" text-anchor="middle" fill="#1b1b1b">%s</text>`+"\n",
			24, num(plotTop+plotHeight/2), esc(h.YLabel))
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (h Histogram) validate() error {
	if len(h.Panels) == 0 {
		return errors.New("chart: histogram has no panels, want at least one")
	}
	if len(h.Edges) < 2 {
		return fmt.Errorf("chart: histogram has %d bucket edges, want at least 2 (one bucket)", len(h.Edges))
	}
	for i, p := range h.Panels {
		if len(p.Counts) != len(h.Edges)-1 {
			return fmt.Errorf("chart: panel %d has %d counts for %d buckets, want one per bucket", i, len(p.Counts), len(h.Edges)-1)
		}
		if p.GuideLabel != "" && (p.Guide < 0 || math.IsNaN(p.Guide) || math.IsInf(p.Guide, 0)) {
			return fmt.Errorf("chart: panel %d guide is %v, want a finite value >= 0", i, p.Guide)
		}
		for j, c := range p.Counts {
			if c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
				return fmt.Errorf("chart: panel %d bucket %d has count %v, want a finite value >= 0", i, j, c)
			}
		}
	}
	return nil
}

// labelEvery returns how many edges apart x tick labels go so that at most
// slots of them fit: a round step (1, 2, 5, 10, 20, 25, 50 ...) so that the
// labelled edges read as round values.
func labelEvery(buckets, slots int) int {
	slots = max(slots, 1)
	for m := 1; ; m *= 10 {
		for _, f := range []int{1, 2, 5, 10, 20, 25, 50} {
			if every := f * m; (buckets+every)/every <= slots || every >= buckets {
				return every
			}
		}
	}
}

// yScale picks a tick step of 1, 2 or 5 times a power of ten giving about
// four intervals, and the top of the axis: the first step at or above peak.
func yScale(peak float64) (step, top float64) {
	if !(peak > 0) {
		return 1, 1
	}
	raw := peak / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if peak >= 1 && step < 1 {
		step = 1
	}
	return step, math.Ceil(peak/step-1e-9) * step
}

// num formats a coordinate or value with at most two decimals.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

// esc escapes s for XML text and attribute values, dropping characters XML
// 1.0 cannot carry.
func esc(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r != 0xFFFE && r != 0xFFFF && !(r >= 0xD800 && r <= 0xDFFF) {
			return r
		}
		return -1
	}, s)
	return escaper.Replace(s)
}

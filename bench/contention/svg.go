package contention

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// palette colours the series in strategy order; it is colour-blind safe
// (Okabe-Ito).
var palette = []string{"#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9"}

// WriteSVG draws the sweep as a standalone SVG chart with two panels side by
// side: total calls against clients (linear axis) and completion time
// against clients (logarithmic axis, since unjittered backoff is an order of
// magnitude slower than the rest). title is printed above the panels.
func WriteSVG(w io.Writer, title string, pts []Point) error {
	if len(pts) == 0 {
		return errors.New("contention: no points to draw")
	}
	var names []string
	var clients []int
	for _, p := range pts {
		if !slices.Contains(names, p.Strategy) {
			names = append(names, p.Strategy)
		}
		if !slices.Contains(clients, p.Clients) {
			clients = append(clients, p.Clients)
		}
	}
	slices.Sort(clients)
	const (
		width, height = 960, 430
		panelW        = 400
		panelH        = 290
		top           = 60
	)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" text-anchor="middle">%s</text>`+"\n", width/2, html.EscapeString(title))
	panels := []struct {
		left  float64
		label string
		log   bool
		value func(Point) float64
	}{
		{70, "total calls (writes to the contended row)", false, func(p Point) float64 { return p.Calls }},
		{550, "completion time (units, log scale)", true, func(p Point) float64 { return p.Time }},
	}
	xmin, xmax := float64(clients[0]), float64(clients[len(clients)-1])
	if xmax == xmin {
		xmin, xmax = xmin-1, xmax+1
	}
	for _, pn := range panels {
		ymin, ymax := math.Inf(1), math.Inf(-1)
		for _, p := range pts {
			v := pn.value(p)
			ymin, ymax = min(ymin, v), max(ymax, v)
		}
		var ticks []float64
		var ylo, yhi float64
		if pn.log {
			ylo = math.Floor(math.Log10(max(ymin, 1)))
			yhi = math.Ceil(math.Log10(max(ymax, 10)))
			if yhi == ylo {
				yhi++
			}
			for e := ylo; e <= yhi; e++ {
				ticks = append(ticks, e)
			}
		} else {
			step := niceStep(ymax / 5)
			ylo, yhi = 0, math.Ceil(ymax/step)*step
			if yhi == 0 {
				yhi = step
			}
			for v := 0.0; v <= yhi+step/2; v += step {
				ticks = append(ticks, v)
			}
		}
		x := func(c float64) float64 { return pn.left + (c-xmin)/(xmax-xmin)*panelW }
		y := func(v float64) float64 {
			if pn.log {
				v = math.Log10(max(v, 1))
			}
			return top + panelH - (v-ylo)/(yhi-ylo)*panelH
		}
		// Axes, grid and tick labels.
		fmt.Fprintf(&b, `<g stroke="#999999" stroke-width="1">`+"\n")
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", pn.left, top+panelH, pn.left+panelW, top+panelH)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`+"\n", pn.left, top, pn.left, top+panelH)
		b.WriteString("</g>\n")
		for _, t := range ticks {
			ty := top + panelH - (t-ylo)/(yhi-ylo)*panelH
			label := trimFloat(t)
			if pn.log {
				label = trimFloat(math.Pow(10, t))
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e5e5e5"/>`+"\n", pn.left+1, ty, pn.left+panelW, ty)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", pn.left-6, ty, label)
		}
		for _, c := range xTicks(clients) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(float64(c)), top+panelH+18, c)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">clients</text>`+"\n", pn.left+panelW/2, top+panelH+38)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", pn.left+panelW/2, top-10, html.EscapeString(pn.label))
		// One line per strategy.
		for i, name := range names {
			var pts2 []string
			for _, p := range pts {
				if p.Strategy == name {
					pts2 = append(pts2, fmt.Sprintf("%.1f,%.1f", x(float64(p.Clients)), y(pn.value(p))))
				}
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", palette[i%len(palette)], strings.Join(pts2, " "))
		}
	}
	// Legend, centred under both panels.
	lx := float64(width)/2 - float64(len(names))*130/2
	for i, name := range names {
		fx := lx + float64(i)*130
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", fx, height-22, fx+24, height-22, palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" dominant-baseline="middle">%s</text>`+"\n", fx+30, height-22, html.EscapeString(name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// xTicks picks the client counts to label: the first, and those that are
// multiples of a round step giving about six labels.
func xTicks(clients []int) []int {
	span := float64(clients[len(clients)-1] - clients[0])
	step := max(int(niceStep(span/6)), 1)
	out := []int{clients[0]}
	for _, c := range clients[1:] {
		if c%step == 0 && float64(c-out[len(out)-1]) >= float64(step)/2 {
			out = append(out, c)
		}
	}
	return out
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}

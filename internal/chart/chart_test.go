package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestBar(t *testing.T) {
	tests := []struct {
		v, max float64
		width  int
		ascii  bool
		want   string
	}{
		{0, 10, 10, false, ""},
		{-1, 10, 10, false, ""},
		{math.NaN(), 10, 10, false, ""},
		{5, 0, 10, false, ""},
		{5, 10, 0, false, ""},
		{10, 10, 4, false, "████"},
		{20, 10, 4, false, "████"}, // clamped to the scale
		{5, 10, 4, false, "██"},
		{1, 16, 2, false, "▏"},       // 1/16 of 2 cells is exactly one eighth
		{0.001, 1000, 4, false, "▏"}, // tiny but positive: never invisible
		{3, 8, 1, false, "▍"},
		{11, 16, 2, false, "█▍"},
		{5, 10, 4, true, "##"},
		{0.001, 1000, 4, true, "#"},
		{10, 10, 3, true, "###"},
	}
	for _, tt := range tests {
		if got := Bar(tt.v, tt.max, tt.width, tt.ascii); got != tt.want {
			t.Errorf("Bar(%v, %v, %d, %v) = %q, want %q", tt.v, tt.max, tt.width, tt.ascii, got, tt.want)
		}
	}
}

func TestYScale(t *testing.T) {
	tests := []struct{ peak, step, top float64 }{
		{0, 1, 1},
		{1, 1, 1},
		{3, 1, 3},
		{7, 2, 8},
		{1000, 500, 1000}, // 1000/4 = 250 rounds up to a step of 500
		{63, 20, 80},
		{0.3, 0.1, 0.3},
	}
	for _, tt := range tests {
		step, top := yScale(tt.peak)
		if math.Abs(step-tt.step) > 1e-9 || math.Abs(top-tt.top) > 1e-9 {
			t.Errorf("yScale(%v) = %v, %v; want %v, %v", tt.peak, step, top, tt.step, tt.top)
		}
		if top < tt.peak {
			t.Errorf("yScale(%v): top %v is below the peak", tt.peak, top)
		}
	}
}

func sample() Histogram {
	return Histogram{
		Title:  `herd <&> "test"`,
		XLabel: "fire time",
		YLabel: "jobs",
		Edges:  []string{"0s", "1s", "2s", "3s"},
		Panels: []Panel{
			{Title: "spike", Counts: []float64{0, 0, 9}},
			{Title: "spread", Counts: []float64{3, 3, 3}, Color: "#123456"},
		},
	}
}

type rect struct {
	class, title, height, fill string
}

// walk decodes doc with encoding/xml, failing on any malformation, and
// returns the bars of each panel in document order.
func walk(t *testing.T, doc []byte) (root xml.Name, panels [][]rect) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var cur *rect
	inTitle := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, doc)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root.Local == "" {
				root = el.Name
			}
			attr := func(name string) string {
				for _, a := range el.Attr {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			switch {
			case el.Name.Local == "g" && attr("class") == "panel":
				panels = append(panels, nil)
			case el.Name.Local == "rect" && attr("class") == "bar":
				cur = &rect{class: "bar", height: attr("height"), fill: attr("fill")}
			case el.Name.Local == "title" && cur != nil:
				inTitle = true
			}
		case xml.CharData:
			if inTitle {
				cur.title += string(el)
			}
		case xml.EndElement:
			switch {
			case el.Name.Local == "title":
				inTitle = false
			case el.Name.Local == "rect" && cur != nil:
				panels[len(panels)-1] = append(panels[len(panels)-1], *cur)
				cur = nil
			}
		}
	}
	return root, panels
}

func TestWriteSVG(t *testing.T) {
	var buf bytes.Buffer
	if err := sample().WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	root, panels := walk(t, buf.Bytes())
	if root.Space != "http://www.w3.org/2000/svg" || root.Local != "svg" {
		t.Errorf("root element = %v, want svg in the SVG namespace", root)
	}
	if len(panels) != 2 {
		t.Fatalf("got %d panels, want 2", len(panels))
	}
	wantTitles := [][]string{{"0s–1s: 0", "1s–2s: 0", "2s–3s: 9"}, {"0s–1s: 3", "1s–2s: 3", "2s–3s: 3"}}
	for i, bars := range panels {
		if len(bars) != 3 {
			t.Fatalf("panel %d has %d bars, want 3", i, len(bars))
		}
		for j, b := range bars {
			if b.title != wantTitles[i][j] {
				t.Errorf("panel %d bar %d title = %q, want %q", i, j, b.title, wantTitles[i][j])
			}
		}
	}
	// One y scale for both panels: 9 is the top of the axis (step 5 -> 10),
	// so the spike's height is 9/10 of the plot and a 3 is 3/10 of it.
	if got, want := panels[0][2].height, num(9.0/10*plotHeight); got != want {
		t.Errorf("spike height = %s, want %s", got, want)
	}
	if got, want := panels[1][0].height, num(3.0/10*plotHeight); got != want {
		t.Errorf("spread height = %s, want %s", got, want)
	}
	if panels[0][0].height != "0" {
		t.Errorf("empty bucket height = %s, want 0", panels[0][0].height)
	}
	if panels[1][0].fill != "#123456" || panels[0][0].fill != palette[0] {
		t.Errorf("fills = %s, %s; want the panel colour and the palette's first", panels[1][0].fill, panels[0][0].fill)
	}
	if !strings.Contains(buf.String(), "herd &lt;&amp;&gt; &quot;test&quot;") {
		t.Error("title is not escaped")
	}
}

func TestWriteSVGManyBuckets(t *testing.T) {
	h := Histogram{Title: "many", Edges: make([]string, 201), Panels: []Panel{{Counts: make([]float64, 200)}}}
	for i := range h.Edges {
		h.Edges[i] = strings.Repeat("x", i%7)
	}
	h.Panels[0].Counts[17] = 4
	var buf bytes.Buffer
	if err := h.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	_, panels := walk(t, buf.Bytes())
	if len(panels) != 1 || len(panels[0]) != 200 {
		t.Fatalf("got %v panels, want 1 with 200 bars", len(panels))
	}
	if n := strings.Count(buf.String(), `class="tick"`); n > plotWidth/minTickSpace+1 {
		t.Errorf("%d x tick labels, want at most %d so they do not overlap", n, plotWidth/minTickSpace+1)
	}
}

func TestWriteSVGInvalid(t *testing.T) {
	cases := map[string]func(h *Histogram){
		"no panels":    func(h *Histogram) { h.Panels = nil },
		"no edges":     func(h *Histogram) { h.Edges = h.Edges[:1] },
		"short panel":  func(h *Histogram) { h.Panels[1].Counts = h.Panels[1].Counts[:2] },
		"negative":     func(h *Histogram) { h.Panels[0].Counts[0] = -1 },
		"not a number": func(h *Histogram) { h.Panels[0].Counts[0] = math.NaN() },
		"infinite":     func(h *Histogram) { h.Panels[0].Counts[0] = math.Inf(1) },
	}
	for name, mutate := range cases {
		h := sample()
		mutate(&h)
		var buf bytes.Buffer
		err := h.WriteSVG(&buf)
		if err == nil || !strings.HasPrefix(err.Error(), "chart: ") {
			t.Errorf("%s: err = %v, want a chart: error", name, err)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %d bytes before failing, want none", name, buf.Len())
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteSVGWriteError(t *testing.T) {
	if err := sample().WriteSVG(failWriter{}); err == nil || err.Error() != "disk full" {
		t.Errorf("err = %v, want the writer's error", err)
	}
}

func TestLabelEvery(t *testing.T) {
	tests := []struct{ buckets, slots, want int }{
		{1, 9, 1},
		{8, 9, 1},  // 9 labels fit
		{9, 9, 2},  // 10 would not
		{20, 9, 5}, // every 2 gives 11, every 5 gives 0, 5, 10, 15, 20
		{200, 9, 25},
		{7, 0, 10}, // one slot: only the first edge
	}
	for _, tt := range tests {
		if got := labelEvery(tt.buckets, tt.slots); got != tt.want {
			t.Errorf("labelEvery(%d, %d) = %d, want %d", tt.buckets, tt.slots, got, tt.want)
		}
	}
}

func TestWriteSVGGuide(t *testing.T) {
	h := sample()
	h.Panels[1].GuideLabel, h.Panels[1].Guide = "mean 3", 3
	var buf bytes.Buffer
	if err := h.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	walk(t, buf.Bytes())
	if n := strings.Count(buf.String(), `class="guide"`); n != 1 {
		t.Errorf("%d guide lines, want 1 (only the panel that asked)", n)
	}
	y := num(figTitleH + panelHeight + panelTitleH + plotHeight - 3.0/10*plotHeight)
	if !strings.Contains(buf.String(), `y1="`+y+`"`) || !strings.Contains(buf.String(), ">mean 3</text>") {
		t.Errorf("guide line at y=%s labelled \"mean 3\" not found", y)
	}
}

func TestEscDropsInvalidXMLChars(t *testing.T) {
	if got := esc("a\x00b\x1bc\td"); got != "abc\td" {
		t.Errorf("esc = %q", got)
	}
}

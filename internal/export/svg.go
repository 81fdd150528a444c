package export

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/store"
)

// SVG layout, in pixels.
const (
	svgWidth       = 1200
	svgFrameHeight = 16
	svgFontSize    = 12
	svgFontWidth   = 0.59 // of the font size: an average glyph's width
	svgPadSide     = 10
	svgPadTop      = 96 // title, buttons, legend, details line
	svgPadBottom   = 10
	svgMinWidth    = 0.1
	svgLegendY     = 58 // the legend's swatches' top
	svgDetailsY    = 86 // the details line's baseline
)

// svgNode is a node of the call tree, root first.
type svgNode struct {
	frame    int32 // -1: the root ("all")
	total    uint64
	children []int32
}

// WriteSVG writes the run as an interactive flame graph: one self-contained SVG file
// (styles and script inside it) to open in a browser.
//
// Stacks of every thread are merged into one tree, root at the top (under the title, so
// the first screen shows it however deep the stacks go), callees below their callers; a
// box's width is its share of samples, and boxes narrower than a tenth of a pixel are left
// out. Hovering shows a frame's name, image, samples and percent; clicking zooms into it
// (Reset Zoom, or clicking the root, goes back); Search (or Ctrl-F) highlights the frames
// whose names match a regular expression and shows their share of samples. Native frames
// are warm (red to yellow), JIT'd frames green, inlined frames aqua, kernel frames orange
// and unknown frames grey, as the legend under the title says.
func WriteSVG(w io.Writer, run *store.Run) error {
	if err := check(run); err != nil {
		return err
	}
	p := &run.Profile
	nodes := svgTree(p)
	total := nodes[0].total

	// Lay out: boxes wide enough to see, depth first.
	type box struct {
		node  int32
		depth int
		x     float64 // samples before it
	}
	var boxes []box
	maxDepth := 0
	scale := 0.0
	if total > 0 {
		scale = float64(svgWidth-2*svgPadSide) / float64(total)
	}
	type item struct {
		node  int32
		depth int
		x     uint64
	}
	todo := []item{{0, 0, 0}}
	for len(todo) > 0 {
		it := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		n := &nodes[it.node]
		if it.node != 0 && float64(n.total)*scale < svgMinWidth {
			continue
		}
		boxes = append(boxes, box{it.node, it.depth, float64(it.x)})
		maxDepth = max(maxDepth, it.depth)
		x := it.x
		for i := len(n.children) - 1; i >= 0; i-- {
			x += nodes[n.children[i]].total
		}
		// Push in reverse so children come out left to right.
		for i := len(n.children) - 1; i >= 0; i-- {
			c := n.children[i]
			x -= nodes[c].total
			todo = append(todo, item{c, it.depth + 1, x})
		}
	}
	height := svgPadTop + (maxDepth+1)*svgFrameHeight + svgPadBottom

	bw := bufio.NewWriterSize(w, 256<<10)
	title := "Flame Graph: " + productName(&run.Meta)
	if run.Meta.ID != "" {
		title += " (stax run " + run.Meta.ID + ")"
	}
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" onload="init(evt)">
<style type="text/css"><![CDATA[%s]]></style>
<script type="text/ecmascript"><![CDATA[%s]]></script>
<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f8"/>
<text id="title" x="%d" y="24" text-anchor="middle">`, svgWidth, height, svgWidth, height, svgStyle, svgScript, svgWidth/2)
	xmlText(bw, title)
	fmt.Fprintf(bw, `</text>
<text id="subtitle" x="%d" y="42" text-anchor="middle">`, svgWidth/2)
	xmlText(bw, fmt.Sprintf("%s samples · click a frame to zoom, Ctrl-F to search", commaU(total)))
	fmt.Fprintf(bw, `</text>
<text id="unzoom" class="button hide" x="%d" y="24">Reset Zoom</text>
<text id="search" class="button" x="%d" y="24" text-anchor="end">Search</text>
`, svgPadSide, svgWidth-svgPadSide)
	writeSVGLegend(bw)
	fmt.Fprintf(bw, `<text id="matched" x="%d" y="%d" text-anchor="end"> </text>
<text id="details" x="%d" y="%d"> </text>
<g id="frames" data-total="%d" data-width="%d" data-pad="%d" data-fontsize="%d" data-fontwidth="%g">
`, svgWidth-svgPadSide, svgDetailsY, svgPadSide, svgDetailsY,
		total, svgWidth-2*svgPadSide, svgPadSide, svgFontSize, svgFontWidth)

	var num []byte
	for _, b := range boxes {
		n := &nodes[b.node]
		var name, image, kind string
		inlined := false
		if n.frame < 0 {
			name, image, kind = "all", "", ""
		} else {
			f := &p.Frames[n.frame]
			name, image, kind, inlined = cleanText(funcName(f)), cleanText(imageName(f)), f.Kind, f.Inlined
		}
		x := svgPadSide + b.x*scale
		wd := float64(n.total) * scale
		y := svgPadTop + b.depth*svgFrameHeight
		pct := 0.0
		if total > 0 {
			pct = 100 * float64(n.total) / float64(total)
		}
		bw.WriteString(`<g class="f"><title>`)
		xmlText(bw, name)
		bw.WriteString("\n")
		if image != "" {
			xmlText(bw, image)
			if inlined {
				bw.WriteString(" (inlined)")
			}
			bw.WriteString("\n")
		}
		num = strconv.AppendUint(num[:0], n.total, 10)
		bw.Write(num)
		fmt.Fprintf(bw, " samples, %.2f%%</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%d\">",
			pct, x, y, wd, svgFrameHeight-1, svgColor(kind, inlined, name), x+3, y+svgFrameHeight-4)
		xmlText(bw, svgFit(name, wd))
		bw.WriteString("</text></g>\n")
	}
	bw.WriteString("</g>\n</svg>\n")
	return bw.Flush()
}

// svgTree merges every entry's stack into a call tree, root first; node 0 is the root.
// Children are ordered by name, as flamegraph.pl does.
func svgTree(p *agg.Profile) []svgNode {
	perStack := make([]uint64, len(p.Stacks))
	for _, e := range p.Entries {
		perStack[e.Stack] += e.Count
	}
	nodes := []svgNode{{frame: -1}}
	type key struct {
		parent int32
		frame  uint32
	}
	index := map[key]int32{}
	fst := p.FuncStacks()
	for si, c := range perStack {
		if c == 0 {
			continue
		}
		nodes[0].total += c
		cur := int32(0)
		s := fst[si]
		for i := len(s) - 1; i >= 0; i-- {
			k := key{cur, s[i]}
			n, ok := index[k]
			if !ok {
				n = int32(len(nodes))
				nodes = append(nodes, svgNode{frame: int32(s[i])})
				nodes[cur].children = append(nodes[cur].children, n)
				index[k] = n
			}
			nodes[n].total += c
			cur = n
		}
	}
	for i := range nodes {
		ch := nodes[i].children
		sort.Slice(ch, func(a, b int) bool {
			fa, fb := &p.Frames[nodes[ch[a]].frame], &p.Frames[nodes[ch[b]].frame]
			if fa.Func != fb.Func {
				return fa.Func < fb.Func
			}
			return nodes[ch[a]].frame < nodes[ch[b]].frame
		})
	}
	return nodes
}

// svgFit is name truncated to fit a box w pixels wide ("" when not even 3 characters fit).
func svgFit(name string, w float64) string {
	fit := int((w - 6) / (svgFontSize * svgFontWidth))
	if fit < 3 {
		return ""
	}
	r := []rune(name)
	if len(r) <= fit {
		return name
	}
	return string(r[:fit-2]) + ".."
}

// svgLegend names the colour families, in the legend's order: kind, inlined, label.
var svgLegend = []struct {
	kind    string
	inlined bool
	label   string
}{
	{agg.KindUser, false, "native"},
	{agg.KindUser, true, "inlined"},
	{agg.KindJIT, false, "JIT"},
	{agg.KindPython, false, "Python"},
	{agg.KindKernel, false, "kernel"},
	{agg.KindUnknown, false, "unknown"},
}

// svgMatchColor is the fill of the frames a search matches.
const svgMatchColor = "rgb(230,0,230)"

// writeSVGLegend writes the legend: a swatch of each colour family (its middle shade) and
// of the search's highlight, with their names, centred under the subtitle.
func writeSVGLegend(bw *bufio.Writer) {
	const swatch, gap = 12, 18
	type item struct{ fill, label string }
	var items []item
	for _, l := range svgLegend {
		items = append(items, item{svgFamily(l.kind, l.inlined, 0.5, 0.5), l.label})
	}
	items = append(items, item{svgMatchColor, "search match"})
	width := 0.0
	for _, it := range items {
		width += swatch + 4 + float64(len(it.label))*svgFontSize*svgFontWidth + gap
	}
	x := (svgWidth - width + gap) / 2
	bw.WriteString(`<g id="legend">` + "\n")
	for _, it := range items {
		fmt.Fprintf(bw, `<rect class="swatch" x="%.1f" y="%d" width="%d" height="%d" fill="%s" rx="2" ry="2"/><text x="%.1f" y="%d">`,
			x, svgLegendY, swatch, swatch, it.fill, x+swatch+4, svgLegendY+swatch-2)
		xmlText(bw, it.label)
		bw.WriteString("</text>\n")
		x += swatch + 4 + float64(len(it.label))*svgFontSize*svgFontWidth + gap
	}
	bw.WriteString("</g>\n")
}

// svgColor picks a frame's fill: a colour family per kind, varied by a hash of the name
// so neighbouring frames differ but a function keeps its colour.
func svgColor(kind string, inlined bool, name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	v1, v2 := float64(v&0xff)/255, float64((v>>8)&0xff)/255
	return svgFamily(kind, inlined, v1, v2)
}

// svgFamily is the shade (v1, v2 in [0, 1]) of a kind's colour family.
func svgFamily(kind string, inlined bool, v1, v2 float64) string {
	var r, g, b float64
	switch {
	case kind == "":
		r, g, b = 200, 200, 200
	case inlined:
		r, g, b = 50+60*v1, 165+55*v1, 165+55*v1
	case kind == agg.KindJIT:
		r, g, b = 50+60*v1, 200+55*v1, 50+60*v1
	case kind == agg.KindPython:
		r, g, b = 55+40*v1, 100+50*v1, 200+55*v1
	case kind == agg.KindKernel:
		r, g, b = 200+55*v1, 110+70*v1, 0+20*v2
	case kind == agg.KindUser:
		r, g, b = 205+50*v1, 230*v2, 55*v1
	default:
		g = 150 + 60*v1
		r, b = g, g
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", int(r), int(g), int(b))
}

// xmlText writes s escaped as XML character data (or an attribute value).
func xmlText(w *bufio.Writer, s string) {
	xml.EscapeText(w, []byte(s))
}

func commaU(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

const svgStyle = `
text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }
#title { font-size: 17px; }
#subtitle { fill: #666; }
#details, #matched { fill: #333; }
.button { fill: #06c; cursor: pointer; text-decoration: underline; }
.f { cursor: pointer; }
.f:hover rect { stroke: #000; stroke-width: 0.5; }
.f text { pointer-events: none; }
.hide { display: none; }
.parent { opacity: 0.5; }
`

// svgScript is the flame graph's behaviour: details on hover, zoom on click, search.
const svgScript = `
"use strict";
var frames, details, matchedText, unzoomBtn, searchBtn, total, width, pad, fontSize, fontWidth;
var searching = null;
function init(evt) {
	frames = document.getElementById("frames");
	details = document.getElementById("details");
	matchedText = document.getElementById("matched");
	unzoomBtn = document.getElementById("unzoom");
	searchBtn = document.getElementById("search");
	total = +frames.getAttribute("data-total");
	width = +frames.getAttribute("data-width");
	pad = +frames.getAttribute("data-pad");
	fontSize = +frames.getAttribute("data-fontsize");
	fontWidth = +frames.getAttribute("data-fontwidth");
	var gs = frames.getElementsByTagName("g");
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i], r = rectOf(g);
		g.origX = +r.getAttribute("x");
		g.origW = +r.getAttribute("width");
		g.origFill = r.getAttribute("fill");
		g.depthY = +r.getAttribute("y");
		var t = titleOf(g);
		g.fullTitle = t;
		g.funcName = nameOf(t);
	}
	frames.addEventListener("mouseover", function (e) {
		var g = frameOf(e.target);
		if (g) details.textContent = g.fullTitle.split("\n").join(" \u00b7 ");
	});
	frames.addEventListener("mouseout", function (e) {
		if (frameOf(e.target)) details.textContent = " ";
	});
	frames.addEventListener("click", function (e) {
		var g = frameOf(e.target);
		if (!g) return;
		if (g.origW >= width - 0.01) unzoom(); else zoom(g);
	});
	unzoomBtn.addEventListener("click", unzoom);
	searchBtn.addEventListener("click", function () {
		if (searching !== null) resetSearch(); else searchPrompt();
	});
	window.addEventListener("keydown", function (e) {
		if ((e.ctrlKey || e.metaKey) && e.keyCode === 70) { e.preventDefault(); searchPrompt(); }
		else if (e.keyCode === 27) { resetSearch(); unzoom(); }
	});
}
function rectOf(g) { return g.getElementsByTagName("rect")[0]; }
function textOf(g) { return g.getElementsByTagName("text")[0]; }
function titleOf(g) { var t = g.getElementsByTagName("title")[0]; return t ? t.textContent : ""; }
// A title is the function's name, its image (absent for the root), and its samples, one a
// line; names never contain a newline.
function nameOf(title) { return title.split("\n")[0]; }
function frameOf(el) {
	while (el && el !== frames) {
		if (el.tagName === "g" && el.parentNode === frames) return el;
		el = el.parentNode;
	}
	return null;
}
function fitText(g, w) {
	var t = textOf(g), name = g.funcName, fit = Math.floor((w - 6) / (fontSize * fontWidth));
	if (fit < 3) { t.textContent = ""; return; }
	t.textContent = name.length <= fit ? name : name.substring(0, fit - 2) + "..";
}
function place(g, x, w) {
	var r = rectOf(g);
	r.setAttribute("x", x.toFixed(2));
	r.setAttribute("width", w.toFixed(2));
	textOf(g).setAttribute("x", (x + 3).toFixed(2));
	fitText(g, w);
}
function zoom(z) {
	var zx = z.origX, zw = z.origW, zy = z.depthY, ratio = width / zw;
	var gs = frames.getElementsByTagName("g");
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i];
		g.classList.remove("parent");
		g.classList.remove("hide");
		var inside = g.origX >= zx - 0.0001 && g.origX + g.origW <= zx + zw + 0.0001;
		if (g.depthY < zy) {
			// Above the zoomed frame: its callers (kept, full width) or others.
			if (g.origX <= zx + 0.0001 && g.origX + g.origW >= zx + zw - 0.0001) {
				g.classList.add("parent");
				place(g, pad, width);
			} else {
				g.classList.add("hide");
			}
		} else if (inside) {
			place(g, pad + (g.origX - zx) * ratio, g.origW * ratio);
		} else {
			g.classList.add("hide");
		}
	}
	unzoomBtn.classList.remove("hide");
}
function unzoom() {
	var gs = frames.getElementsByTagName("g");
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i];
		g.classList.remove("parent");
		g.classList.remove("hide");
		place(g, g.origX, g.origW);
	}
	unzoomBtn.classList.add("hide");
}
function searchPrompt() {
	var term = prompt("Search for (regular expression):", searching || "");
	if (term === null || term === "") return;
	search(term);
}
function search(term) {
	var re;
	try { re = new RegExp(term); } catch (err) { re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")); }
	var gs = frames.getElementsByTagName("g"), spans = [];
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i], r = rectOf(g);
		if (g.origW >= width - 0.01 && g.funcName === "all") { r.setAttribute("fill", g.origFill); continue; }
		if (re.test(g.funcName)) {
			r.setAttribute("fill", "` + svgMatchColor + `");
			spans.push([g.origX, g.origW]);
		} else {
			r.setAttribute("fill", g.origFill);
		}
	}
	// A match inside another match is not counted twice.
	spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
	var covered = 0, end = -1;
	for (var j = 0; j < spans.length; j++) {
		var s = spans[j];
		if (s[0] + s[1] <= end + 0.0001) continue;
		covered += s[1];
		end = s[0] + s[1];
	}
	searching = term;
	searchBtn.textContent = "Reset Search";
	matchedText.textContent = "Matched: " + (100 * covered / width).toFixed(2) + "%";
}
function resetSearch() {
	var gs = frames.getElementsByTagName("g");
	for (var i = 0; i < gs.length; i++) rectOf(gs[i]).setAttribute("fill", gs[i].origFill);
	searching = null;
	searchBtn.textContent = "Search";
	matchedText.textContent = " ";
}
`

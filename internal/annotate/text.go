package annotate

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/stax-profiler/stax/internal/numfmt"
	"github.com/stax-profiler/stax/internal/textesc"
)

// TextOptions controls WriteText.
type TextOptions struct {
	NoSource bool // omit file:line headers and source text
	// HotLines is the number of hottest lines named in the summary
	// header (default 3).
	HotLines int
}

// String renders the annotation as text with default options.
func (a *Annotation) String() string {
	var b strings.Builder
	_ = a.WriteText(&b, TextOptions{})
	return b.String()
}

const heatWidth = 4 // cells of the heat bar

var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// heatBar renders samples relative to max as a bar of heatWidth cells.
func heatBar(samples, max uint64) string {
	if samples == 0 || max == 0 {
		return strings.Repeat(" ", heatWidth)
	}
	units := int((samples*heatWidth*8 + max - 1) / max)
	if units < 1 {
		units = 1
	}
	if units > heatWidth*8 {
		units = heatWidth * 8
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("█", units/8))
	b.WriteString(eighths[units%8])
	n := units / 8
	if units%8 != 0 {
		n++
	}
	b.WriteString(strings.Repeat(" ", heatWidth-n))
	return b.String()
}

// WriteText renders the annotation:
//
//	func  [image]  12,345 samples  hottest lines: a.c:3 (61.2%), ...
//	 Percent   Samples  Heat │ a.c:3
//	                         │   while (i != n)
//	   61.20     7,555  ██▌  │ L1:  0x401004:  cmp    %rcx,%rax
//	    0.00         0       │      0x401007:  jne    L1   ↑
func (a *Annotation) WriteText(w io.Writer, opt TextOptions) error {
	bw := bufio.NewWriter(w)
	nhot := opt.HotLines
	if nhot <= 0 {
		nhot = 3
	}
	// Summary header.
	// Names, files, source text and the disassembly's symbol names come from the program:
	// all are escaped (textesc) so that none can drive the terminal.
	fmt.Fprintf(bw, " %s", textesc.Escape(orUnknown(a.Func)))
	if a.Image != "" {
		fmt.Fprintf(bw, "  %s", textesc.Escape(a.Image))
	}
	fmt.Fprintf(bw, "  %s samples", commas(a.Total))
	if a.Outside > 0 {
		fmt.Fprintf(bw, " (+%s outside the code)", commas(a.Outside))
	}
	for i, name := range a.Counters {
		if i < len(a.CounterTotals) {
			fmt.Fprintf(bw, "  %s %s", textesc.Escape(name), commas(a.CounterTotals[i]))
		}
	}
	if len(a.HotLines) > 0 {
		bw.WriteString("  hottest lines: ")
		for i, h := range a.HotLines {
			if i >= nhot {
				break
			}
			if i > 0 {
				bw.WriteString(", ")
			}
			fmt.Fprintf(bw, "%s:%d (%.1f%%)", textesc.Escape(shortFile(h.File)), h.Line, h.Percent)
		}
	}
	bw.WriteString("\n")
	if m := a.CountersMultiplexed; m != nil {
		fmt.Fprintf(bw, "counters multiplexed by the kernel: they counted %.1f%% of the time, and the samples were taken only then: counts are those of that time (ratios such as IPC hold)\n", *m*100)
	}

	labelW := 0
	for i := range a.Insts {
		if l := len(a.Insts[i].Label); l > 0 && l+2 > labelW {
			labelW = l + 2
		}
	}
	addrW := 0
	if n := len(a.Insts); n > 0 {
		addrW = len(strconv.FormatUint(a.Insts[n-1].Addr, 16)) + 2
	}
	left := "  Percent   Samples  Heat "
	for _, name := range a.Counters {
		left += fmt.Sprintf("%*s ", counterWidth, strings.ToUpper(textesc.Escape(clipName(name, counterWidth))))
	}
	blank := strings.Repeat(" ", len(left))
	counterBlank := strings.Repeat(" ", len(a.Counters)*(counterWidth+1))
	bw.WriteString(left + "│ " + "Source / Disassembly\n")

	lastBlock := -1
	var lastChain []string
	nextGap := 0
	gapsBefore := func(i int) {
		for ; nextGap < len(a.Gaps) && a.Gaps[nextGap].Before <= i; nextGap++ {
			g := &a.Gaps[nextGap]
			if g.Samples > 0 {
				fmt.Fprintf(bw, "  %7.2f %9s  %s %s│ ", percent(g.Samples, a.Total), commas(g.Samples), strings.Repeat(" ", heatWidth), counterBlank)
			} else {
				fmt.Fprintf(bw, "%s│ ", blank)
			}
			fmt.Fprintf(bw, "code bytes for %#x-%#x were not captured: %s\n", g.Start, g.End, textesc.Escape(g.Why))
		}
	}
	for i := range a.Insts {
		gapsBefore(i)
		in := &a.Insts[i]
		if !opt.NoSource && in.Block >= 0 && in.Block != lastBlock {
			b := &a.SourceBlocks[in.Block]
			fmt.Fprintf(bw, "%s│ %s:%d", blank, textesc.Escape(b.File), b.Line)
			if len(b.InlineChain) > 0 && !equalChain(b.InlineChain, lastChain) {
				fmt.Fprintf(bw, "  (inlined from %s)", textesc.Escape(strings.Join(b.InlineChain, " ← ")))
			}
			if b.Samples > 0 {
				fmt.Fprintf(bw, "  [%.1f%%]", b.Percent)
			}
			bw.WriteString("\n")
			if b.Text != "" {
				fmt.Fprintf(bw, "%s│   %s\n", blank, textesc.Escape(b.Text))
			}
			lastChain = b.InlineChain
		}
		if in.Block >= 0 {
			lastBlock = in.Block
		}
		if in.Samples > 0 {
			fmt.Fprintf(bw, "  %7.2f %9s  %s %s│ ", in.Percent, commas(in.Samples), heatBar(in.Samples, a.MaxSamples), a.countersColumns(in.Counters, counterBlank))
		} else {
			fmt.Fprintf(bw, "%s│ ", blank)
		}
		if in.Focus > 0 {
			bw.WriteString("▶") // the focused inlined function's samples are here
		} else if a.Focus != "" {
			bw.WriteString(" ")
		}
		if labelW > 0 {
			lab := ""
			if in.Label != "" {
				lab = in.Label + ":"
			}
			fmt.Fprintf(bw, "%-*s", labelW, lab)
		}
		addr := "0x" + strconv.FormatUint(in.Addr, 16) + ":"
		fmt.Fprintf(bw, "%-*s  %s", addrW+1, addr, textesc.Escape(in.Display))
		if in.JumpLabel != "" {
			if in.Backward {
				bw.WriteString("   ↑")
			} else {
				bw.WriteString("   ↓")
			}
		}
		bw.WriteString("\n")
	}
	gapsBefore(len(a.Insts))
	return bw.Flush()
}

// counterWidth is the width of a counter's column.
const counterWidth = 12

// countersColumns is an instruction's counters, a column each (blank without them).
func (a *Annotation) countersColumns(vs []uint64, blank string) string {
	if len(vs) != len(a.Counters) {
		return blank
	}
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%*s ", counterWidth, commas(v))
	}
	return b.String()
}

// clipName is s cut to n bytes.
func clipName(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "??"
	}
	return s
}

// commas formats n with thousands separators.
var commas = numfmt.Commas

func itoa(n int) string       { return strconv.Itoa(n) }
func utoaHex(v uint64) string { return strconv.FormatUint(v, 16) }

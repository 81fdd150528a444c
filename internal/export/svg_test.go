package export

import (
	"bytes"
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// svgFrames parses an SVG flame graph and returns the title of every frame box.
func svgFrames(t *testing.T, b []byte) (titles []string, scripts int) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var stack []string
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tk.Name.Local)
			text.Reset()
			if tk.Name.Local == "script" {
				scripts++
			}
			for _, a := range tk.Attr {
				if (a.Name.Local == "href" || a.Name.Local == "src") && !strings.HasPrefix(a.Value, "#") {
					t.Errorf("external resource %s=%q", a.Name.Local, a.Value)
				}
			}
		case xml.CharData:
			text.Write(tk)
		case xml.EndElement:
			if tk.Name.Local == "title" && len(stack) >= 2 && stack[len(stack)-2] == "g" {
				titles = append(titles, text.String())
			}
			stack = stack[:len(stack)-1]
		}
	}
	return titles, scripts
}

var svgTitle = regexp.MustCompile(`^([^\n]*)\n(?:([^\n]*)\n)?(\d+) samples, ([0-9.]+)%$`)

func TestSVG(t *testing.T) {
	r := fixture()
	var buf bytes.Buffer
	if err := WriteSVG(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.Bytes()
	titles, scripts := svgFrames(t, out)
	if scripts != 1 {
		t.Errorf("%d scripts", scripts)
	}
	for _, bad := range []string{"http://", "https://"} {
		for _, m := range regexp.MustCompile(regexp.QuoteMeta(bad)+`[^"]*`).FindAll(out, -1) {
			if string(m) != "http://www.w3.org/2000/svg" {
				t.Errorf("external reference %s", m)
			}
		}
	}
	got := map[string]uint64{} // frame title line -> samples, summed over boxes
	for _, ti := range titles {
		m := svgTitle.FindStringSubmatch(ti)
		if m == nil {
			t.Fatalf("title %q", ti)
		}
		n, _ := strconv.ParseUint(m[3], 10, 64)
		key := m[1]
		if m[2] != "" {
			img, inl := strings.CutSuffix(m[2], " (inlined)")
			key += " [" + img + "]"
			if inl {
				key += " (inlined)"
			}
		}
		got[key] += n
	}
	total := r.Profile.TotalSamples()
	if got["all"] != total {
		t.Errorf("all: %d, want %d", got["all"], total)
	}
	// Every frame's name appears (escaped in the file, back as it was once parsed).
	for i := range r.Profile.Frames {
		f := &r.Profile.Frames[i]
		found := false
		for k := range got {
			if strings.HasPrefix(k, cleanText(funcName(f))+" [") {
				found = true
			}
		}
		if !found {
			t.Errorf("frame %q missing", f.Func)
		}
	}
	want := map[string]uint64{
		"main [/opt/app/bin/app]":                            1257,
		"jitted_func2 [[jit]]":                               710,
		"mix [/opt/app/bin/app] (inlined)":                   40,
		"asm_exc_page_fault [[kernel.kallsyms]]":             13,
		cleanText(hostileName) + " [/opt/app/lib/lib<&>.so]": 203,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q: %d, want %d", k, got[k], v)
		}
	}
	if bytes.Contains(out, []byte("<T&U>")) || !bytes.Contains(out, []byte("op&lt;T&amp;U&gt;")) {
		t.Error("hostile name not escaped")
	}
	// Colour families: JIT green, kernel orange, native warm.
	for _, c := range []struct {
		name string
		ok   func(r, g, b int) bool
	}{
		{"jitted_func1", func(r, g, b int) bool { return g > 190 && r < 120 }},
		{"asm_exc_page_fault", func(r, g, b int) bool { return r >= 200 && b < 30 && g >= 110 && g < 190 }},
		{"worker_loop", func(r, g, b int) bool { return r >= 205 && b <= 55 }},
		{regexp.QuoteMeta("[unknown] 0x7f00000ff000"), func(r, g, b int) bool { return r == g && g == b && r >= 150 }}, // grey
	} {
		m := regexp.MustCompile(`<title>` + c.name + `\n[^<]*</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no box for %s", c.name)
		}
		r, _ := strconv.Atoi(string(m[1]))
		g, _ := strconv.Atoi(string(m[2]))
		b, _ := strconv.Atoi(string(m[3]))
		if !c.ok(r, g, b) {
			t.Errorf("%s coloured rgb(%d,%d,%d)", c.name, r, g, b)
		}
	}
}

func TestSVGFit(t *testing.T) {
	if s := svgFit("abcdefghijklmnopqrstuvwxyz", 1000); s != "abcdefghijklmnopqrstuvwxyz" {
		t.Errorf("wide box: %q", s)
	}
	if s := svgFit("abcdefghijklmnopqrstuvwxyz", 50); s != "abcd.." {
		t.Errorf("narrow box: %q", s)
	}
	if s := svgFit("abcdefghijklmnopqrstuvwxyz", 20); s != "" {
		t.Errorf("tiny box: %q", s)
	}
}

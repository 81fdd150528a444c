package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/disasm"
	"github.com/stax-profiler/stax/internal/store"
)

// hostile is a JIT function name as a hostile jitdump could write it: it retitles the
// terminal (OSC ... BEL), breaks the line, carries a byte that is not UTF-8 and a C1 CSI.
// A stored run holds it with the bad byte as U+FFFD (JSON cannot hold it), so printed
// from a run it reads storedEscaped.
const (
	hostile        = "evil\x1b]0;pwned\x07\nfn\xff\u009b2J"
	hostileEscaped = `evil\x1b]0;pwned\x07\x0afn\xff\u009b2J`
	storedEscaped  = `evil\x1b]0;pwned\x07\x0afn` + "\uFFFD" + `\u009b2J`
)

// hostileRun is the golden fixture with names from a hostile program: a JIT function, its
// source file, an image, a thread name, a JIT dump path and a note.
func hostileRun(id string) *store.Run {
	r := fixtureRun(id, true)
	r.Profile.Frames[2].Func = hostile
	r.Profile.Frames[2].File = "loops\x1b[8m.toy"
	r.Profile.Frames[0].Image = "/opt/app/bin/\x1b[2Japp"
	r.Profile.Threads[0].Name = "worker-\x1b[2J"
	r.JIT[0].Path = "/tmp/jit-\x1b[1A.dump"
	r.Meta.Notes = append(r.Meta.Notes, "no symbols for /opt/\x1b]8;;x\x07lib.so")
	for i := range r.Code[0].Lines {
		r.Code[0].Lines[i].File = "loops\x1b[8m.toy"
	}
	return r
}

// checkPrintable fails if text output holds anything a terminal would act on: a control
// character other than the line ends, DEL, a C1 control or invalid UTF-8.
func checkPrintable(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not valid UTF-8:\n%q", what, out)
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			t.Errorf("%s: output holds %U:\n%q", what, r, out)
			return
		}
	}
}

// TestHostileNamesEscaped prints a run whose names carry terminal control sequences: text
// output shows them escaped (and is compared with testdata/golden), JSON keeps them exact.
func TestHostileNamesEscaped(t *testing.T) {
	home := t.TempDir()
	t.Setenv("STAX_HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", "")
	const id = "20261101-120000-100"
	if err := store.Save(store.Path(id), hostileRun(id)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want []string // escaped forms the text must show
	}{
		{"top-hostile", []string{"top"}, []string{storedEscaped + " (loops\\x1b[8m.toy:4)  [jit]", "[/opt/app/bin/\\x1b[2Japp]"}},
		{"flame-hostile", []string{"flame", "--threshold-pct", "0"}, []string{storedEscaped + "  [jit]"}},
		{"annotate-hostile", []string{"annotate", "evil"}, []string{" " + storedEscaped + "  [jit]", "loops\\x1b[8m.toy:5"}},
		{"threads-hostile", []string{"threads"}, []string{"worker-\\x1b[2J", storedEscaped}},
		{"status-hostile", []string{"status"}, []string{"/tmp/jit-\\x1b[1A.dump", "/opt/\\x1b]8;;x\\x07lib.so"}},
	} {
		var out, errOut bytes.Buffer
		if code := Main(c.args, &out, &errOut); code != 0 {
			t.Fatalf("stax %v: exit %d: %s", c.args, code, errOut.String())
		}
		got := out.String()
		checkPrintable(t, c.name, got)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: no %q in:\n%s", c.name, w, got)
			}
		}
		path := filepath.Join("testdata", "golden", c.name+".golden")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if want, err := os.ReadFile(path); err != nil {
			t.Errorf("%v (run with -update to create it)", err)
		} else if got != string(want) {
			t.Errorf("stax %v differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", c.args, path, got, want)
		}
	}
	// Commands whose layout other tests pin: only that nothing raw is printed.
	for _, args := range [][]string{{"compare", id, id, "-n", "50"}, {"list"}} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != 0 {
			t.Fatalf("stax %v: exit %d: %s", args, code, errOut.String())
		}
		checkPrintable(t, strings.Join(args, " "), out.String())
		if args[0] != "list" && !strings.Contains(out.String(), storedEscaped) {
			t.Errorf("stax %v does not show the escaped name:\n%s", args, out.String())
		}
	}
	// JSON keeps the names exact: its own escaping makes it safe.
	var out, errOut bytes.Buffer
	if code := Main([]string{"top", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("top --json: exit %d: %s", code, errOut.String())
	}
	checkPrintable(t, "top --json", out.String())
	var top api.Top
	if err := json.Unmarshal(out.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range top.Rows {
		found = found || r.Func == strings.ToValidUTF8(hostile, "\uFFFD")
	}
	if !found {
		t.Errorf("top --json lost the name %q: %+v", hostile, top.Rows)
	}
	if !strings.Contains(out.String(), "fn\uFFFD"+`\u009b2J`) {
		t.Errorf("top --json does not escape the C1 character:\n%s", out.String())
	}
	// An error quoting a name is escaped too.
	out.Reset()
	errOut.Reset()
	Main([]string{"annotate", "no\x1b[2Jsuch"}, &out, &errOut)
	checkPrintable(t, "annotate error", errOut.String())
	if !strings.Contains(errOut.String(), `no\x1b[2Jsuch`) {
		t.Errorf("annotate error: %q", errOut.String())
	}
}

// TestPrintersEscapeRawNames gives the flame, timeline and annotate printers a name that no run file
// could hold (a byte that is not UTF-8): it prints as \xff.
func TestPrintersEscapeRawNames(t *testing.T) {
	var b strings.Builder
	printFlame(&b, &api.FlameNode{Func: hostile, Image: "[jit]", Total: 1, TotalPct: 100,
		Children: []*api.FlameNode{{Func: "child\x1b[2J", Image: "/lib/\xfelib.so", Total: 1, TotalPct: 100, Self: 1}}}, 0, agg.ByFunction)
	checkPrintable(t, "flame", b.String())
	for _, w := range []string{hostileEscaped + "  [jit]", `child\x1b[2J  [/lib/\xfelib.so]`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("flame: no %q in:\n%s", w, b.String())
		}
	}
	b.Reset()
	tl := api.Timeline{BucketSec: 1}
	tl.Buckets = 2
	tl.Threads = []api.TimelineThread{{Tid: 7, Name: "th\x1b[2J\xff", Samples: 2, Counts: []uint64{1, 1}}}
	tl.Phases = []api.Phase{{FirstBucket: 0, LastBucket: 1, Func: hostile, Image: "[jit]", Samples: 2, Pct: 100}}
	printTimeline(&b, tl)
	checkPrintable(t, "timeline", b.String())
	for _, w := range []string{`th\x1b[2J\xff`, hostileEscaped + "  [jit]"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("timeline: no %q in:\n%s", w, b.String())
		}
	}
	b.Reset()
	a := annotate.Annotate(annotate.Input{Func: hostile, Image: "[jit]", Start: 0x1000, Code: loopCode(10), Arch: disasm.ArchX86_64,
		Samples: map[uint64]uint64{0x1015: 3}})
	if err := a.WriteText(&b, annotate.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	checkPrintable(t, "annotate", b.String())
	if !strings.HasPrefix(b.String(), " "+hostileEscaped+"  [jit]  3 samples") {
		t.Errorf("annotate:\n%s", b.String())
	}
}

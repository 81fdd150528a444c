package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stax-profiler/stax/internal/agg"
	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/testutil"
)

// fde is the code one FDE of an image's .eh_frame covers, [start, end), as readelf shows it.
type fde struct{ start, end uint64 }

// readelfFDEs lists the FDEs of an image with readelf --debug-dump=frames, sorted.
func readelfFDEs(t *testing.T, path string) []fde {
	t.Helper()
	out := testutil.Run(t, "", testutil.RequireTool(t, "readelf"), "--debug-dump=frames", path)
	re := regexp.MustCompile(`FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	var fs []fde
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		a, _ := strconv.ParseUint(m[1], 16, 64)
		b, _ := strconv.ParseUint(m[2], 16, 64)
		fs = append(fs, fde{a, b})
	}
	if len(fs) == 0 {
		t.Fatalf("readelf shows no FDE in %s", path)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].start < fs[j].start })
	return fs
}

// fdeHolding returns the FDE holding an address.
func fdeHolding(fs []fde, addr uint64) (fde, bool) {
	for _, f := range fs {
		if addr >= f.start && addr < f.end {
			return f, true
		}
	}
	return fde{}, false
}

// rangeStart parses a row named image+0xOFF; ok is false for any other name.
func rangeStart(r api.TopRow) (uint64, bool) {
	hex, ok := strings.CutPrefix(r.Func, r.Image+"+0x")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	return v, err == nil
}

// perfRow is one row of perf report --sort dso,sym -n: a symbol, or an address perf could
// not name (one row per address).
type perfRow struct {
	dso     string
	sym     string
	addr    uint64 // the address of an unnamed row
	unnamed bool
	samples uint64
}

// perfRows runs perf report on a data file and returns its rows, with sample counts.
func perfRows(t *testing.T, data string) []perfRow {
	t.Helper()
	rep := exec.Command("perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "dso,sym", "-n", "-q", "-g", "none")
	rep.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	out, err := rep.Output()
	if err != nil {
		t.Fatalf("perf report: %v", err)
	}
	line := regexp.MustCompile(`^\s*[0-9.]+%\s+(\d+)\s+(\S+)\s+\[[.k]\]\s+(\S.*?)\s*$`)
	var rows []perfRow
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.ParseUint(m[1], 10, 64)
		r := perfRow{dso: m[2], sym: m[3], samples: n}
		if a, ok := strings.CutPrefix(r.sym, "0x"); ok {
			if v, err := strconv.ParseUint(a, 16, 64); err == nil {
				r.addr, r.unnamed = v, true
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("perf report shows no rows:\n%s", out)
	}
	return rows
}

// perfSamplesIn sums perf's samples of an image: all of them, and those of the rows named
// sym or, for a function range [lo, hi), of the unnamed rows of addresses inside it (perf
// shows an unnamed address as its offset in the image's file, which is its virtual address
// where the code segment's offset and address agree, as in the images tested here).
func perfSamplesIn(rows []perfRow, dso, sym string, lo, hi uint64) (in, all uint64) {
	for _, r := range rows {
		if r.dso != dso {
			continue
		}
		all += r.samples
		if sym != "" && r.sym == sym || sym == "" && r.unnamed && r.addr >= lo && r.addr < hi {
			in += r.samples
		}
	}
	return in, all
}

// checkShare compares a row's share of its image's samples in stax and in perf, within
// five standard errors of the difference of two shares (at least one point).
func checkShare(t *testing.T, what string, staxIn, staxAll, perfIn, perfAll uint64) {
	t.Helper()
	if staxAll == 0 || perfAll == 0 {
		t.Errorf("%s: no samples (stax %d, perf %d)", what, staxAll, perfAll)
		return
	}
	s, p := float64(staxIn)*100/float64(staxAll), float64(perfIn)*100/float64(perfAll)
	q := (s + p) / 200
	tol := math.Max(1, 5*100*math.Sqrt(q*(1-q)/float64(staxAll)+q*(1-q)/float64(perfAll)))
	t.Logf("%s: stax %.1f%% (%d of %d)  perf %.1f%% (%d of %d)  tolerance %.1f", what, s, staxIn, staxAll, p, perfIn, perfAll, tol)
	if math.Abs(s-p) > tol {
		t.Errorf("%s: stax %.1f%% of the image's samples, perf %.1f%%: more than %.1f points apart", what, s, p, tol)
	}
}

// checkRows checks the rows stax lists for an image: none for one instruction inside a
// function range (each unnamed row inside an FDE is named after its start). It returns
// the image's rows, most samples first, and their samples.
func checkRows(t *testing.T, top api.Top, image string, fdes []fde) ([]api.TopRow, uint64) {
	t.Helper()
	var rows []api.TopRow
	var all uint64
	perInst := 0
	defer func() {
		if perInst > 5 {
			t.Errorf("%s: %d rows for one instruction each (the first 5 shown)", image, perInst)
		}
	}()
	for _, r := range top.Rows {
		if r.Image != image {
			continue
		}
		rows = append(rows, r)
		all += r.Self
		if strings.HasPrefix(r.Func, "[unknown]") {
			t.Errorf("%s row without a place in it: %+v", image, r)
		}
		off, ok := rangeStart(r)
		if !ok {
			continue
		}
		f, in := fdeHolding(fdes, off)
		switch {
		case in && f.start != off:
			if perInst++; perInst > 5 {
				continue
			}
			t.Errorf("%s: a row for one instruction of the function at %#x..%#x: %+v", image, f.start, f.end, r)
		case in && r.Kind != agg.KindUser:
			t.Errorf("%s: a function range of kind %q, not native code: %+v", image, r.Kind, r)
		case !in && r.Kind != agg.KindUnknown:
			t.Errorf("%s: an address no FDE holds is not an unknown frame: %+v", image, r)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Self > rows[j].Self })
	return rows, all
}

// checkAnnotated annotates a row and checks that the annotation is the row's whole
// function (its range, for a function range) and holds all its samples, on instructions.
func checkAnnotated(t *testing.T, e *staxEnv, r api.TopRow, size uint64) {
	t.Helper()
	var res api.Annotate
	e.mustJSON(&res, "annotate", r.Func)
	a := res.Annotation
	if a == nil || a.Func != r.Func || a.Total != r.Self || a.Outside > 0 || len(a.Insts) < 2 {
		t.Fatalf("annotate %s: %+v; want all %d samples on its instructions", r.Func, a, r.Self)
	}
	if size > 0 && a.End-a.Start != size {
		t.Errorf("annotate %s: %#x..%#x is not the whole function range of %d bytes", r.Func, a.Start, a.End, size)
	}
	var on uint64
	for _, in := range a.Insts {
		on += in.Samples
		if in.Addr < a.Start || in.Addr >= a.End {
			t.Errorf("annotate %s: instruction at %#x outside %#x..%#x", r.Func, in.Addr, a.Start, a.End)
		}
	}
	if on != r.Self {
		t.Errorf("annotate %s: %d samples on instructions, the row has %d", r.Func, on, r.Self)
	}
}

// textFeed writes words of a made-up language to w until stop is closed: text xz
// compresses with work in its match finder and encoder, for as long as it is fed.
func textFeed(w io.WriteCloser, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer w.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 4096)
	for i := range words {
		b := make([]byte, 2+rng.IntN(9))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		words[i] = string(b)
	}
	var buf bytes.Buffer
	for {
		select {
		case <-stop:
			return
		default:
		}
		buf.Reset()
		for buf.Len() < 64<<10 {
			buf.WriteString(words[int(rng.ExpFloat64()*300)%len(words)])
			if rng.IntN(12) == 0 {
				buf.WriteByte('\n')
			} else {
				buf.WriteByte(' ')
			}
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
	}
}

// TestStrippedLibraryGroupedByFunction records xz compressing text with stax and perf at
// once. Debian's liblzma is stripped (and no debug file is looked for): perf shows its
// code one row per address; stax one row per function, named after the start of the FDE
// holding it, each holding the samples perf shows inside that range. The hottest range
// annotates whole, and status says the library's code has no symbols.
func TestStrippedLibraryGroupedByFunction(t *testing.T) {
	testutil.RequirePerf(t)
	perf := testutil.RequireTool(t, "perf")
	xz := testutil.RequireTool(t, "xz")
	const link = "/lib/x86_64-linux-gnu/liblzma.so.5"
	testutil.RequireFile(t, link, "liblzma5")
	lib, err := filepath.EvalSymlinks(link)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("readelf", "-S", lib).Output(); err == nil && bytes.Contains(out, []byte(".symtab")) {
		t.Skipf("%s has a symbol table: its functions are named, not grouped", lib)
	}
	fdes := readelfFDEs(t, lib)

	e := newEnv(t)
	e.env = []string{"DEBUGINFOD_URLS=", "STAX_DEBUG_ROOT=" + t.TempDir()}
	data := filepath.Join(t.TempDir(), "perf.data")
	rec := e.cmd("record", "-q", "--", perf, "record", "-q", "-F", "999", "-o", data, "--", xz, "-6", "-T1", "-c")
	in, err := rec.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut syncBuffer
	rec.Stdout, rec.Stderr = io.Discard, &errOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Process.Kill() })
	stop, fed := make(chan struct{}), make(chan struct{})
	go textFeed(in, stop, fed)
	out, werr, code := e.run("wait", "--for-samples", "3000", "--timeout-ms", "120000")
	close(stop)
	<-fed
	if err := rec.Wait(); err != nil {
		t.Fatalf("stax record -- perf record -- xz: %v\n%s", err, errOut.String())
	}
	if code != 0 {
		t.Fatalf("stax wait: exit %d\n%s%s", code, out, werr)
	}

	var top api.Top
	e.mustJSON(&top, "top", "-n", "100000")
	image := filepath.Base(lib)
	rows, staxAll := checkRows(t, top, image, fdes)
	if staxAll < 500 {
		t.Fatalf("only %d samples in %s: %+v", staxAll, image, top.Rows)
	}
	prows := perfRows(t, data)
	checked := 0
	for _, r := range rows {
		if r.Self*20 < staxAll || checked == 5 {
			break // the rows with at least 5% of the library's samples, five at most
		}
		off, ok := rangeStart(r)
		f, in := fdeHolding(fdes, off)
		if !ok || !in {
			t.Errorf("%s: a hot row that is not a function range: %+v", image, r)
			continue
		}
		perfIn, perfAll := perfSamplesIn(prows, image, "", f.start, f.end)
		checkShare(t, r.Func, r.Self, staxAll, perfIn, perfAll)
		checked++
	}
	if checked == 0 {
		t.Fatalf("no function range of %s holds 5%% of its samples: %+v", image, rows)
	}
	off, _ := rangeStart(rows[0])
	f, _ := fdeHolding(fdes, off)
	checkAnnotated(t, e, rows[0], f.end-f.start)

	text, _, _ := e.run("status")
	if want := fmt.Sprintf("symbols:   %s: ", image); !strings.Contains(text, want) || !strings.Contains(text, "samples in code without symbols") {
		t.Errorf("status does not say %s's code has no symbols:\n%s", image, text)
	}
}

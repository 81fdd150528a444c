package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"

	"github.com/stax-profiler/stax/internal/api"
	"github.com/stax-profiler/stax/internal/push"
	"github.com/stax-profiler/stax/internal/testutil"
)

// buildCollector builds the OpenTelemetry Collector of testdata/otelcol (a module of its
// own) once per version of its sources: the binary is kept in the temporary directory
// under the hash of its go.mod, go.sum and sources. The first build downloads its modules
// and takes minutes.
func buildCollector(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testutil.RepoRoot(t), "internal/e2e/testdata/otelcol")
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "main.go", "exporter.go"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	bin := filepath.Join(os.TempDir(), "stax-test-otelcol-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	tmp := bin + fmt.Sprintf(".%d", os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the collector: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// collector is a running collector that appends the profiles it receives to out.
type collector struct {
	bin, addr, out string
	cmd            *exec.Cmd
	log            syncBuffer
}

func (c *collector) start(t *testing.T) {
	t.Helper()
	c.cmd = exec.Command(c.bin, "-addr", c.addr, "-out", c.out)
	c.cmd.Stdout, c.cmd.Stderr = &c.log, &c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		if conn, err := net.Dial("tcp", c.addr); err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector does not listen on %s:\n%s", c.addr, c.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *collector) stop(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Logf("collector: %v\n%s", err, c.log.String())
	}
}

// received reads the profiles the collector wrote: samples by leaf function, and the
// sequence numbers of the windows.
func (c *collector) received(t *testing.T) (byLeaf map[string]int64, seqs []int64) {
	t.Helper()
	b, err := os.ReadFile(c.out)
	if err != nil {
		t.Fatalf("the collector wrote nothing: %v\n%s", err, c.log.String())
	}
	byLeaf = map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		pd, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles(sc.Bytes())
		if err != nil {
			t.Fatalf("read the collector's output: %v", err)
		}
		d := pd.Dictionary()
		str := func(i int32) string { return d.StringTable().At(int(i)) }
		for _, rp := range pd.ResourceProfiles().All() {
			for _, sp := range rp.ScopeProfiles().All() {
				for _, p := range sp.Profiles().All() {
					for _, ai := range p.AttributeIndices().AsRaw() {
						if a := d.AttributeTable().At(int(ai)); str(a.KeyStrindex()) == push.SequenceKey {
							seqs = append(seqs, a.Value().Int())
						}
					}
					for _, s := range p.Samples().All() {
						locs := d.StackTable().At(int(s.StackIndex())).LocationIndices()
						if locs.Len() == 0 {
							continue
						}
						lines := d.LocationTable().At(int(locs.At(0))).Lines()
						if lines.Len() == 0 {
							continue
						}
						name := str(d.FunctionTable().At(int(lines.At(0).FunctionIndex())).NameStrindex())
						for _, v := range s.Values().AsRaw() {
							byLeaf[name] += v
						}
					}
				}
			}
		}
	}
	return byLeaf, seqs
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestPushOTelCollector records the toy JIT pushing OTLP profiles every second to a real
// OpenTelemetry Collector, which is stopped for 3 s mid-run and started again on the same
// port: every window arrives once, in order, with the JIT's names in its 1:2 ratio.
func TestPushOTelCollector(t *testing.T) {
	testutil.RequirePerf(t)
	col := &collector{bin: buildCollector(t), addr: freeAddr(t), out: filepath.Join(t.TempDir(), "profiles.jsonl")}
	col.start(t)
	defer func() { col.stop(t) }()
	e := newEnv(t)
	toy := buildToyJIT(t)
	rec := e.cmd("record", "-q", "--push", "otlp+http://"+col.addr, "--push-every", "1s", "--service", "toyjit", "--", toy, "-cpu", "8s")
	var recOut syncBuffer
	rec.Stdout, rec.Stderr = &recOut, &recOut
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Process.Kill() })
	defer removeJITFiles(t, e)

	// Once the first window has arrived, the collector goes away for 3 s.
	for deadline := time.Now().Add(60 * time.Second); ; {
		if fi, err := os.Stat(col.out); err == nil && fi.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no window arrived:\n%s\n%s", recOut.String(), col.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	col.stop(t)
	var during api.Status
	time.Sleep(3 * time.Second)
	e.mustJSON(&during, "status")
	col.start(t)
	if err := rec.Wait(); err != nil {
		t.Fatalf("record: %v\n%s", err, recOut.String())
	}
	if p := during.Push; p == nil || p.Failed == 0 || p.LastError == "" {
		t.Errorf("status while the collector was down: %+v; want failed attempts and the error", p)
	}
	byLeaf, seqs := col.received(t)
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	t.Logf("%d windows: %v", len(seqs), seqs)
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("windows %v: want 1 to %d, each once", seqs, len(seqs))
		}
	}
	if len(seqs) < 4 {
		t.Errorf("%d windows of an 8 s run pushed every second", len(seqs))
	}
	checkPushedRatio(t, e, byLeaf["jitted_func1"], byLeaf["jitted_func2"])
}

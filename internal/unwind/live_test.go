package unwind

import (
	"bufio"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stax-profiler/stax/internal/perfevent"
	"github.com/stax-profiler/stax/internal/perfrecord"
	"github.com/stax-profiler/stax/internal/testutil"
)

// captured is one sample as the kernel sent it.
type captured struct {
	Regs    Regs
	Stack   []byte
	FPChain []uint64
}

// capture runs prog (it prints a line when ready and runs until its first argument in
// seconds passes), samples it in dwarf mode and returns want samples and its mappings.
func capture(t *testing.T, prog string, want int) ([]captured, []Mapping) {
	t.Helper()
	testutil.RequirePerf(t)
	cmd := exec.Command(prog, "60")
	startReady(t, cmd)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	maps, err := ReadMaps(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return sampleLive(t, cmd.Process.Pid, want), maps
}

// startReady starts cmd and waits for the first line it prints.
func startReady(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("wait for %s to start: %v", cmd.Path, err)
	}
}

// sampleLive samples process pid's user stacks in dwarf mode until it has want samples.
func sampleLive(t testing.TB, pid int, want int) []captured {
	t.Helper()
	cfg := perfevent.Config{Pids: []int{pid}, Freq: 999, UserOnly: true, CallGraph: "dwarf", StackSize: 16 << 10}
	s, err := perfevent.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, mask := perfevent.SampleTypeFor(cfg)
	d := &perfrecord.Decoder{SampleType: st, SampleIDAll: true, RegsUserMask: mask}
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	var got []captured
	deadline := time.Now().Add(50 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		err := s.Read(func(cpu int, rec []byte) {
			h, err := perfrecord.ParseHeader(rec)
			if err != nil || h.Type != perfrecord.TypeSample {
				return
			}
			var smp perfrecord.Sample
			if err := d.Sample(rec, &smp); err != nil {
				t.Errorf("decode sample: %v", err)
				return
			}
			if int(smp.Pid) != pid || smp.RegsABI == 0 {
				return
			}
			_, user := perfrecord.SplitCallchain(smp.Callchain)
			got = append(got, captured{
				Regs:    Regs{BP: smp.Regs[0], SP: smp.Regs[1], IP: smp.Regs[2]},
				Stack:   append([]byte(nil), smp.Stack...),
				FPChain: append([]uint64(nil), user...),
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // polling the ring, not synchronising
	}
	if len(got) < want {
		t.Fatalf("got %d samples in time, want %d", len(got), want)
	}
	return got[:want]
}

// symbolizer names addresses of one image by its symbol table.
type symbolizer struct {
	syms []elf.Symbol
}

func newSymbolizer(t *testing.T, path string) *symbolizer {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	return &symbolizer{syms: append(syms, dyn...)}
}

func (s *symbolizer) name(addr uint64) string {
	for _, sym := range s.syms {
		if elf.ST_TYPE(sym.Info) == elf.STT_FUNC && addr >= sym.Value && addr < sym.Value+max(sym.Size, 1) {
			return sym.Name
		}
	}
	return ""
}

// names names each pc of the stack: the function in the fixture image, or "lib".
func names(proc *Maps, prog string, sym *symbolizer, pcs []uint64) []string {
	var out []string
	for _, pc := range pcs {
		m, _ := proc.Mapping(pc)
		if m.Path != prog {
			out = append(out, "lib:"+filepath.Base(m.Path))
			continue
		}
		t := proc.Table(m)
		b, _ := t.bias(m)
		out = append(out, sym.name(pc-b))
	}
	return out
}

func (p *Maps) name(pc uint64) string {
	m, _ := p.Mapping(pc)
	return m.Path
}

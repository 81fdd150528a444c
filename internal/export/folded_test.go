package export

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestFolded(t *testing.T) {
	r := fixture()
	var buf bytes.Buffer
	if err := WriteFolded(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.HasSuffix(out, "\n") {
		t.Fatal("no final newline")
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var total uint64
	stacks := map[string]uint64{}
	var prev string
	for _, l := range lines {
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			t.Fatalf("line %q has no count", l)
		}
		n, err := strconv.ParseUint(l[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if l[:i] <= prev {
			t.Errorf("lines not sorted: %q after %q", l[:i], prev)
		}
		prev = l[:i]
		total += n
		stacks[l[:i]] = n
	}
	if total != r.Profile.TotalSamples() {
		t.Errorf("total %d, want %d", total, r.Profile.TotalSamples())
	}
	hostile := `op<T&U>::"q'uote":semi?control?` + "?tab]]> end"
	want := map[string]uint64{
		"main;run_jit;jitted_func1_[j]":                                                       500,
		"main;run_jit;jitted_func2_[j]":                                                       700,
		"main;run_jit;mix_[i]":                                                                40,
		"main;run_jit;jitted_func2_[j];asm_exc_page_fault_[k]":                                10,
		"main;[unknown] 0x7f00000ff000":                                                       7,
		"worker_loop;" + hostile + ";std::vector<int>::operator[]_[i]":                        120,
		"worker_loop;" + hostile:                                                              80,
		"worker_loop;" + hostile + ";std::vector<int>::operator[]_[i];asm_exc_page_fault_[k]": 3,
	}
	if len(stacks) != len(want) {
		t.Errorf("%d stacks, want %d:\n%s", len(stacks), len(want), out)
	}
	for k, v := range want {
		if stacks[k] != v {
			t.Errorf("%q: %d, want %d\n%s", k, stacks[k], v, out)
		}
	}
}

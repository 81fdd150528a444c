package perfevent

import "testing"

const wakingFormat = `name: sched_waking
ID: 375
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t pid;	offset:24;	size:4;	signed:1;
	field:int prio;	offset:28;	size:4;	signed:1;
	field:int target_cpu;	offset:32;	size:4;	signed:1;

print fmt: "comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, REC->target_cpu
`

func TestParseTraceFormat(t *testing.T) {
	f, err := ParseTraceFormat([]byte(wakingFormat))
	if err != nil {
		t.Fatal(err)
	}
	if got := f["pid"]; got != (TraceField{Offset: 24, Size: 4, Signed: true}) {
		t.Errorf("pid: %+v", got)
	}
	if got := f["comm"]; got != (TraceField{Offset: 8, Size: 16}) {
		t.Errorf("comm: %+v", got)
	}
	raw := make([]byte, 36)
	raw[24], raw[25] = 0x39, 0x30 // 12345
	if v, ok := f["pid"].Value(raw); !ok || v != 12345 {
		t.Errorf("pid value %d %v, want 12345", v, ok)
	}
	raw[28], raw[29], raw[30], raw[31] = 0xff, 0xff, 0xff, 0xff
	if v, ok := f["prio"].Value(raw); !ok || v != -1 {
		t.Errorf("prio value %d %v, want -1", v, ok)
	}
	if _, ok := f["pid"].Value(raw[:27]); ok {
		t.Error("a short raw record gave a pid")
	}
	if _, ok := f["comm"].Value(raw); ok {
		t.Error("a 16-byte field read as an integer")
	}
	if _, err := ParseTraceFormat([]byte("name: x\nformat:\n")); err == nil {
		t.Error("a format without fields parsed")
	}
}

func FuzzParseTraceFormat(f *testing.F) {
	f.Add([]byte(wakingFormat), []byte{1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, b, raw []byte) {
		fields, err := ParseTraceFormat(b)
		if err != nil {
			return
		}
		for _, fl := range fields {
			fl.Value(raw)
		}
	})
}

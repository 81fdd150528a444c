package annotate_test

import (
	"fmt"
	"os"

	"github.com/stax-profiler/stax/internal/annotate"
	"github.com/stax-profiler/stax/internal/disasm"
)

func ExampleAnnotate() {
	// push %rbp; xor %eax,%eax; L: add %rdi,%rax; dec %rdi; jne L;
	// call malloc; pop %rbp; ret
	code := []byte{0x55, 0x31, 0xc0, 0x48, 0x01, 0xf8, 0x48, 0xff, 0xcf, 0x75, 0xf8,
		0xe8, 0xf0, 0x0f, 0x00, 0x00, 0x5d, 0xc3}
	src := []string{"long sum(long n) {", "  long s = 0;", "  while (n--) s += n;", "  return s + (long)malloc(1);", "}"}
	a := annotate.Annotate(annotate.Input{
		Func:    "sum",
		Image:   "[jit]",
		Start:   0x1000,
		Code:    code,
		Arch:    disasm.ArchFromELF(62),
		Samples: map[uint64]uint64{0x1003: 7555, 0x1006: 4000, 0x1009: 790},
		Lines: func(addr uint64) (string, int, []string) {
			switch {
			case addr < 0x1003:
				return "sum.c", 2, nil
			case addr < 0x100b:
				return "sum.c", 3, nil
			}
			return "sum.c", 4, nil
		},
		Source: func(string) ([]string, error) { return src, nil },
		Symbolize: func(addr uint64) (string, bool) {
			return "malloc", addr == 0x2000
		},
	})
	fmt.Println(a.Total, a.HotLines[0].File, a.HotLines[0].Line)
	a.WriteText(os.Stdout, annotate.TextOptions{})
	// Output:
	// 12345 sum.c 3
	//  sum  [jit]  12,345 samples  hottest lines: sum.c:3 (100.0%)
	//   Percent   Samples  Heat │ Source / Disassembly
	//                           │ sum.c:2
	//                           │     long s = 0;
	//                           │     0x1000:  push   %rbp
	//                           │     0x1001:  xor    %eax,%eax
	//                           │ sum.c:3  [100.0%]
	//                           │     while (n--) s += n;
	//     61.20     7,555  ████ │ L1: 0x1003:  add    %rdi,%rax
	//     32.40     4,000  ██▏  │     0x1006:  dec    %rdi
	//      6.40       790  ▌    │     0x1009:  jne    L1   ↑
	//                           │ sum.c:4
	//                           │     return s + (long)malloc(1);
	//                           │     0x100b:  call   0x2000 <malloc>
	//                           │     0x1010:  pop    %rbp
	//                           │     0x1011:  ret
}

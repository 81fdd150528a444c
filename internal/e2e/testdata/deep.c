// Recurses DEPTH calls deep, then spins MS milliseconds of CPU time at the bottom: deeper
// than the kernel's callchain limit (127), its stacks must end in a [truncated] marker.
// Usage: deep DEPTH [MS]
#include <stdio.h>
#include "cpubudget.h"
volatile unsigned long sink;
__attribute__((noinline)) void recurse(int depth, double end) {
	if (depth > 0) { recurse(depth - 1, end); sink++; return; }
	while (thread_cpu_ms() < end) for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i;
}
int main(int argc, char **argv) { recurse(atoi(argv[1]), thread_cpu_ms() + arg_ms(argc, argv, 2, 500)); return 0; }

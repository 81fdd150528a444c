// A program for the separate-debug-file tests: the tests build it with -g, split its debug
// info off with objcopy and strip it, so names and lines can only come from the debug file.
// Usage: split [MS]: with an argument, split_hot runs for MS milliseconds of CPU time (300
// when MS is not a number, e.g. "go"); without, it runs one short round.
#include "cpubudget.h"
volatile unsigned long sink;
void split_touch(void) { sink++; }
void split_hot(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++)
			sink += i * 7;
	while (thread_cpu_ms() < end);
	split_touch();
}
int main(int argc, char **argv) {
	double ms = arg_ms(argc, argv, 1, 0);
	if (argc > 1 && ms <= 0)
		ms = 300;
	split_hot(ms);
	return 0;
}

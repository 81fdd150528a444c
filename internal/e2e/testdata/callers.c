// hot_leaf called from path_a (one part of the work) and from path_b (three parts), each
// called from main: the callers, inverted flame and stack transform tests.
// Built by the tests with: gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline
// Usage: callers MS [wait]: hot_leaf runs for MS milliseconds of CPU time under path_a,
// then for 3*MS under path_b; with "wait" the program then prints "ready" and waits for a
// line on its standard input (the run stays live meanwhile).
#include <stdio.h>
#include <string.h>
#include "cpubudget.h"

volatile unsigned long sink;

// A call at the end keeps each function from being a leaf, which GCC builds without a
// frame (hiding its caller from frame-pointer unwinding).
void touch(void) { sink++; }

void hot_leaf(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++)
			sink += i;
	while (thread_cpu_ms() < end);
	touch();
}
void path_a(double ms) { hot_leaf(ms); touch(); }
void path_b(double ms) { hot_leaf(3 * ms); touch(); }

int main(int argc, char **argv) {
	double ms = arg_ms(argc, argv, 1, 500);
	path_a(ms);
	path_b(ms);
	if (argc > 2 && strcmp(argv[2], "wait") == 0) {
		printf("ready\n");
		fflush(stdout);
		char line[16];
		fgets(line, sizeof line, stdin);
	}
	return 0;
}

// A long-running program whose binary is replaced under it, as a package upgrade does to a
// daemon. Usage: daemon MS [wait]
//   with "wait", it prints "waiting" and reads a line from its standard input first;
//   then it spends MS milliseconds of CPU time in daemon_leaf, called by daemon_middle,
//   called by daemon_outer, prints "ready" and runs until its standard input ends.
// Built by the tests with: gcc -O2 -g -fomit-frame-pointer (only CFI unwinds it).
#include <stdio.h>
#include <string.h>
#include "cpubudget.h"

volatile unsigned long sink;

__attribute__((noinline)) unsigned long daemon_leaf(unsigned long n) {
	for (unsigned long i = 0; i < n; i++)
		sink += i;
	return sink;
}

__attribute__((noinline)) unsigned long daemon_middle(unsigned long n) {
	unsigned long s = daemon_leaf(n);
	__asm__ volatile("" ::: "memory"); // no tail call: daemon_middle stays on the stack
	return s + 1;
}

__attribute__((noinline)) unsigned long daemon_outer(double ms) {
	unsigned long s = 0;
	double end = thread_cpu_ms() + ms;
	do
		s += daemon_middle(CPU_CHUNK);
	while (thread_cpu_ms() < end);
	return s;
}

int main(int argc, char **argv) {
	char line[64];
	if (argc > 2 && strcmp(argv[2], "wait") == 0) {
		puts("waiting");
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			return 1;
	}
	sink += daemon_outer(arg_ms(argc, argv, 1, 300));
	puts("ready");
	fflush(stdout);
	while (fgets(line, sizeof line, stdin))
		;
	return 0;
}

// Alternates two phases: MS milliseconds of CPU in phase_a, then MS (or B_MS) in phase_b,
// and C_MS in phase_c when given, ROUNDS times: phases [MS [ROUNDS [B_MS [C_MS]]]]. A
// timeline shows the alternation; a window over one phase names only its function.
#include <stdio.h>
#include "cpubudget.h"

static volatile unsigned long sink;

__attribute__((noinline)) static void phase_a(double ms) {
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i * 3;
}

__attribute__((noinline)) static void phase_b(double ms) {
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink ^= i * 5;
}

__attribute__((noinline)) static void phase_c(double ms) {
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i * 7;
}

int main(int argc, char **argv) {
	double ms = arg_ms(argc, argv, 1, 1000);
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	double b_ms = arg_ms(argc, argv, 3, ms);
	double c_ms = arg_ms(argc, argv, 4, 0);
	for (int r = 0; r < rounds; r++) {
		phase_a(ms);
		phase_b(b_ms);
		if (c_ms > 0)
			phase_c(c_ms);
	}
	printf("phases done\n");
	return 0;
}

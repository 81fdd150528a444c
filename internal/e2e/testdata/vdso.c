// clock_gettime(CLOCK_MONOTONIC) in a loop, for MS milliseconds of CPU time: the time goes
// to the vdso's __vdso_clock_gettime (no system call), which stax must name from the vdso
// image. Usage: vdso [MS]
#include <stdio.h>
#include <time.h>
#include "cpubudget.h"

volatile long sink;

__attribute__((noinline)) void read_clock(void) {
	struct timespec ts;
	for (int i = 0; i < 1 << 16; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	}
}

int main(int argc, char **argv) {
	double end = thread_cpu_ms() + arg_ms(argc, argv, 1, 1000);
	do
		read_clock();
	while (thread_cpu_ms() < end);
	printf("vdso done\n");
	return 0;
}

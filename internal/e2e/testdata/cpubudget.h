// Workloads sized in CPU time, not iterations: a loop runs until its thread has used a
// given number of milliseconds of CPU, so the samples it yields (one per period of the
// cpu-clock event) do not depend on how fast or how busy the machine is.
#ifndef CPUBUDGET_H
#define CPUBUDGET_H
#include <stdlib.h>
#include <time.h>

// thread_cpu_ms is the CPU time the calling thread has used, in milliseconds.
static double thread_cpu_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// CPU_CHUNK iterations of a loop body are run between two looks at the clock: about a
// millisecond of work, so the clock's own cost stays out of the profile.
#define CPU_CHUNK (1ul << 20)

// arg_ms reads a millisecond budget from argv[i], or returns def.
static double arg_ms(int argc, char **argv, int i, double def) {
	return argc > i ? strtod(argv[i], 0) : def;
}
#endif

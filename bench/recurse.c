// A recursion DEPTH calls deep (rec_a and rec_b in turn) down to leaf, which does a fixed
// piece of work, again and again until the program has used MS milliseconds of CPU time.
// Built -O2 -fomit-frame-pointer, only .eh_frame unwinding finds leaf's callers up to main.
// Usage: recurse DEPTH MS      (RECURSE_CPU=N: run on CPU N alone)
// Output: "work W cpu_s C wall_s S": W recursions done, C the CPU time of the process (user
// and system). A profiler that costs the program more leaves less work done per CPU second.
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static double clock_ms(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE static unsigned long leaf(unsigned long x) {
	for (int i = 0; i < (1 << 15); i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

NOINLINE unsigned long rec_b(int d, unsigned long x);

NOINLINE unsigned long rec_a(int d, unsigned long x) {
	unsigned long r = d > 0 ? rec_b(d - 1, x + 1) : leaf(x);
	return r ^ (r >> 7) ^ (unsigned long)d; // work after the call: no tail call
}

NOINLINE unsigned long rec_b(int d, unsigned long x) {
	unsigned long r = d > 0 ? rec_a(d - 1, x * 3) : leaf(x);
	return r + (r >> 11) + (unsigned long)d;
}

int main(int argc, char **argv) {
	const char *cpu = getenv("RECURSE_CPU");
	if (cpu && *cpu) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(cpu), &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0)
			perror("recurse: sched_setaffinity");
	}
	int depth = argc > 1 ? atoi(argv[1]) : 30;
	double ms = argc > 2 ? strtod(argv[2], 0) : 1000;
	double t0 = clock_ms(CLOCK_MONOTONIC), end = clock_ms(CLOCK_THREAD_CPUTIME_ID) + ms;
	unsigned long work = 0;
	// depth-1 calls below main's: rec_a is the first level.
	while (clock_ms(CLOCK_THREAD_CPUTIME_ID) < end)
		sink += rec_a(depth - 1, work++);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("work %lu cpu_s %.4f wall_s %.4f\n", work,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
	       (clock_ms(CLOCK_MONOTONIC) - t0) / 1e3);
	return 0;
}

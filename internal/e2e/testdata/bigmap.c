// bigmap LINES MS [IDLE_S]: writes a perf map of LINES lines to /tmp/perf-<pid>.map at once
// (a JIT gone wild, or a hostile one), then runs after_map for MS milliseconds of CPU time,
// sleeps IDLE_S seconds (default 0) and prints "exit <CLOCK_MONOTONIC ns> <CPU ms before
// after_map> <CPU ms in after_map>" as it exits.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cpubudget.h"

static volatile unsigned long sink;

__attribute__((noinline)) void after_map(double ms) {
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < CPU_CHUNK; i++)
			sink += i ^ (sink >> 3);
}

int main(int argc, char **argv) {
	long lines = argc > 1 ? atol(argv[1]) : 1000000;
	double ms = arg_ms(argc, argv, 2, 1000);
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	static char buf[1 << 20];
	setvbuf(f, buf, _IOFBF, sizeof buf);
	for (long i = 0; i < lines; i++)
		fprintf(f, "%lx 10 jitted_%ld\n", 0x100000000ul + (unsigned long)i * 16, i);
	fclose(f);
	double before = thread_cpu_ms();
	after_map(ms);
	double in = thread_cpu_ms() - before;
	if (argc > 3)
		sleep((unsigned)atoi(argv[3]));
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("exit %lld %.1f %.1f\n", (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec, before, in);
	fflush(stdout);
	return 0;
}

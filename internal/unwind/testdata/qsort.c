/* Hot path through libc: main -> work -> qsort -> ... -> cmp. Runs until argv[1] seconds pass. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile long sink;

static int cmp(const void *a, const void *b) {
	long x = *(const long *)a, y = *(const long *)b;
	for (int i = 0; i < 20; i++) sink += i;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static void work(long *v, int n) {
	for (int i = 0; i < n; i++) v[i] = (i * 7919L) % 10007;
	qsort(v, n, sizeof v[0], cmp);
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 1;
	struct timespec t0, t;
	static long v[4096];
	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("ready\n");
	fflush(stdout);
	do {
		work(v, 4096);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}

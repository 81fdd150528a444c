// N threads, each burning MS milliseconds of its own CPU time in busy_inner (called from
// busy_outer), then the program prints how long all of them took. With MS 0 the threads
// burn until the program is killed. Usage: busy N MS
// Output: "threads N wall_s W cpu_s C" (wall from the first thread's start to the last
// one's end; CPU of the whole process, user and system).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define CHUNK (1ul << 18) // about a quarter of a millisecond between looks at the clock

static volatile unsigned long sink;
static double budget_ms;

static double clock_ms(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE static void busy_inner(void) {
	for (unsigned long i = 0; i < CHUNK; i++)
		sink += i;
}

NOINLINE static void busy_outer(double end) {
	do
		busy_inner();
	while (end == 0 || clock_ms(CLOCK_THREAD_CPUTIME_ID) < end);
}

static void *worker(void *arg) {
	busy_outer(budget_ms > 0 ? clock_ms(CLOCK_THREAD_CPUTIME_ID) + budget_ms : 0);
	return arg;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 2;
	budget_ms = argc > 2 ? strtod(argv[2], 0) : 1000;
	if (n < 1 || n > 4096) {
		fprintf(stderr, "usage: busy N MS (N from 1 to 4096; MS 0: until killed)\n");
		return 2;
	}
	pthread_t *t = calloc(n, sizeof *t);
	double t0 = clock_ms(CLOCK_MONOTONIC);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], 0, worker, 0)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], 0);
	double wall = (clock_ms(CLOCK_MONOTONIC) - t0) / 1e3;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("threads %d wall_s %.4f cpu_s %.4f\n", n, wall,
	       ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}

// Two targets whose stack copy stays as it is (stackFit's holdFit).
// Usage: switchy threads N MS   N threads, each burning MS ms of CPU time
//        switchy pingpong MS    two threads hand a byte back and forth through two pipes
//                               until the process has used MS ms of CPU time
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static double ms;
static int ab[2], ba[2];

static double cpu_ms(clockid_t clock) {
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static void *burn(void *arg) {
	(void)arg;
	for (double end = cpu_ms(CLOCK_THREAD_CPUTIME_ID) + ms; cpu_ms(CLOCK_THREAD_CPUTIME_ID) < end;)
		for (int i = 0; i < 10000; i++)
			sink += i;
	return NULL;
}

__attribute__((noinline)) static void *pong(void *arg) {
	(void)arg;
	char c;
	while (read(ab[0], &c, 1) == 1 && c == 'x')
		if (write(ba[1], &c, 1) != 1)
			exit(2);
	return NULL;
}

int main(int argc, char **argv) {
	pthread_t t[256];
	if (argc == 4 && strcmp(argv[1], "threads") == 0) {
		int n = atoi(argv[2]);
		ms = strtod(argv[3], 0);
		if (n < 1 || n > 256)
			return 2;
		for (int i = 0; i < n; i++)
			pthread_create(&t[i], NULL, burn, NULL);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "pingpong") == 0) {
		ms = strtod(argv[2], 0);
		if (pipe(ab) || pipe(ba))
			return 2;
		pthread_create(&t[0], NULL, pong, NULL);
		char c = 'x';
		for (double end = cpu_ms(CLOCK_PROCESS_CPUTIME_ID) + ms; cpu_ms(CLOCK_PROCESS_CPUTIME_ID) < end;)
			for (int i = 0; i < 100; i++)
				if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
					return 2;
		c = 'q';
		if (write(ab[1], &c, 1) != 1)
			return 2;
		pthread_join(t[0], NULL);
		return 0;
	}
	fprintf(stderr, "usage: switchy threads N MS | switchy pingpong MS\n");
	return 2;
}

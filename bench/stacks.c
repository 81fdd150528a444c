// THREADS threads walk random call paths for SECONDS of wall-clock time: each path goes
// LEVELS calls deep through stack_l and stack_r, one or the other by a random bit at each
// level, then into a leaf picked by the path: leaf_hot for half the paths, leaf_b for a
// quarter, and for the last quarter leaf_c or leaf_d by one more random bit. 1.25 x 2^LEVELS
// distinct stacks in all (40,960 with the default 15), each path as likely as the others.
// Usage: stacks THREADS SECONDS [LEVELS]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;
static volatile int stop;
static int levels = 15;
static __thread unsigned long rng, path;

static unsigned long next_bit(void) {
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng >> 63;
}

static unsigned long spin(unsigned long x, int n) {
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

NOINLINE unsigned long leaf_hot(unsigned long x) { return spin(x, 1 << 14); }
NOINLINE unsigned long leaf_b(unsigned long x) { return spin(x, 1 << 14); }
NOINLINE unsigned long leaf_c(unsigned long x) { return spin(x, 1 << 14); }
NOINLINE unsigned long leaf_d(unsigned long x) { return spin(x, 1 << 14); }

NOINLINE unsigned long stack_l(int d);
NOINLINE unsigned long stack_r(int d);

static unsigned long down(int d) {
	if (d == 0) {
		switch (path & 3) {
		case 2: return leaf_b(path);
		case 3: return next_bit() ? leaf_d(path) : leaf_c(path);
		default: return leaf_hot(path);
		}
	}
	unsigned long bit = next_bit();
	path = path << 1 | bit;
	return bit ? stack_r(d - 1) : stack_l(d - 1);
}

NOINLINE unsigned long stack_l(int d) { return down(d) + (unsigned long)d; }
NOINLINE unsigned long stack_r(int d) { return down(d) ^ (unsigned long)d; }

static void *worker(void *arg) {
	rng = 0x9e3779b97f4a7c15ul ^ (unsigned long)arg * 0xbf58476d1ce4e5b9ul;
	while (!stop) {
		path = 0;
		sink += down(levels);
	}
	return arg;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 2;
	double secs = argc > 2 ? strtod(argv[2], 0) : 10;
	if (argc > 3) levels = atoi(argv[3]);
	if (n < 1 || n > 256 || levels < 1 || levels > 30) {
		fprintf(stderr, "usage: stacks THREADS SECONDS [LEVELS]\n");
		return 2;
	}
	pthread_t t[256];
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], 0, worker, (void *)(i + 1));
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	while (nanosleep(&ts, &ts))
		;
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], 0);
	return 0;
}

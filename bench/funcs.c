// THREADS threads spend their time in a handful of functions at fixed shares of the work
// (hot_mix about 45%, sort_small a third, then hash_block, parse_step, misc_tail), each
// reached through two levels of callers, for SECONDS of wall-clock time (0: until killed).
// Usage: funcs THREADS SECONDS
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;
static volatile int stop;

NOINLINE unsigned long hot_mix(unsigned long x, int n) {
	for (int i = 0; i < n; i++) {
		x ^= x >> 33;
		x *= 0xff51afd7ed558ccdul;
		x ^= x >> 29;
	}
	return x;
}

NOINLINE unsigned long parse_step(const char *s, int n) {
	unsigned long v = 0;
	for (int r = 0; r < n; r++)
		for (const char *p = s; *p; p++)
			v = v * 10 + (unsigned long)(*p >= '0' && *p <= '9' ? *p - '0' : 7);
	return v;
}

NOINLINE unsigned long hash_block(const unsigned char *b, int len, int n) {
	unsigned long h = 1469598103934665603ul;
	for (int r = 0; r < n; r++)
		for (int i = 0; i < len; i++)
			h = (h ^ b[i]) * 1099511628211ul;
	return h;
}

NOINLINE unsigned long sort_small(unsigned long seed, int n) {
	unsigned long a[64], s = 0;
	for (int r = 0; r < n; r++) {
		for (int i = 0; i < 64; i++)
			a[i] = seed = seed * 6364136223846793005ul + 1;
		for (int i = 1; i < 64; i++)
			for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
				unsigned long t = a[j];
				a[j] = a[j - 1];
				a[j - 1] = t;
			}
		s += a[r % 64];
	}
	return s;
}

NOINLINE unsigned long misc_tail(unsigned long x, int n) {
	for (int i = 0; i < n; i++)
		x += (x << 3) ^ (unsigned long)i;
	return x;
}

NOINLINE unsigned long compute(unsigned long x) {
	return hot_mix(x, 20000) + misc_tail(x, 4000);
}

NOINLINE unsigned long ingest(unsigned long x) {
	static const char digits[] = "12345678901234567890123456789012";
	unsigned char buf[256];
	memset(buf, (int)x, sizeof buf);
	return parse_step(digits, 250) + hash_block(buf, sizeof buf, 30) + sort_small(x, 4);
}

NOINLINE unsigned long step(unsigned long x) { return compute(x) ^ ingest(x); }

static void *worker(void *arg) {
	unsigned long x = (unsigned long)arg;
	while (!stop)
		sink += x = step(x);
	return arg;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 2;
	double secs = argc > 2 ? strtod(argv[2], 0) : 0;
	if (n < 1 || n > 256) {
		fprintf(stderr, "usage: funcs THREADS SECONDS\n");
		return 2;
	}
	pthread_t t[256];
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], 0, worker, (void *)(i + 1));
	if (secs <= 0)
		for (;;)
			pause();
	struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	while (nanosleep(&ts, &ts))
		;
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], 0);
	return 0;
}

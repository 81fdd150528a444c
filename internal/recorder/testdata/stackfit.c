// Built -O2 -fomit-frame-pointer: stacks only .eh_frame unwinding can walk. The program
// recurses 30 calls deep with small frames (shallow) until it gets SIGUSR1, then with
// frames of some 150 bytes (wide: about 4.6 KiB of stack) for MS milliseconds of CPU time,
// and exits. A shallow phase longer than a minute of CPU time exits with status 2.
// Usage: stackfit MS
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;
static volatile sig_atomic_t deep;

static void on_usr1(int sig) {
	(void)sig;
	deep = 1;
}

static double cpu_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE static unsigned long leaf(unsigned long x) {
	for (int i = 0; i < (1 << 12); i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

NOINLINE unsigned long shallow(int d, unsigned long x) {
	unsigned long r = d > 0 ? shallow(d - 1, x + 1) : leaf(x);
	return r ^ (r >> 7) ^ (unsigned long)d; // work after the call: no tail call
}

NOINLINE unsigned long wide(int d, unsigned long x) {
	volatile unsigned long pad[16];
	pad[d % 16] = x;
	unsigned long r = d > 0 ? wide(d - 1, x + pad[(d + 1) % 16]) : leaf(x);
	return r + pad[d % 16];
}

int main(int argc, char **argv) {
	double ms = argc > 1 ? strtod(argv[1], 0) : 1000;
	signal(SIGUSR1, on_usr1);
	unsigned long w = 0;
	double limit = cpu_ms() + 60000;
	while (!deep) {
		sink += shallow(29, w++);
		if (cpu_ms() > limit)
			return 2;
	}
	for (double end = cpu_ms() + ms; cpu_ms() < end;)
		sink += wide(29, w++);
	printf("%lu\n", w);
	return 0;
}

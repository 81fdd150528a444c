// Built -O2 -fomit-frame-pointer: stacks only .eh_frame unwinding can walk, and one frame
// it cannot: blind, written in assembly with no call-frame information, lies between a
// recursion 30 calls deep with frames of some 150 bytes (about 4.6 KiB of stack) and the
// leaf where the time is spent. Every walk stops at blind, having read a few hundred bytes
// of a stack that is much deeper. Runs for MS milliseconds of CPU time.
// Usage: blindcall MS
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static double cpu_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

NOINLINE unsigned long leaf(unsigned long x) {
	for (int i = 0; i < (1 << 20); i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

// blind(x) returns leaf(x), through a frame of its own that no .eh_frame entry describes
// (and rbp is not a frame pointer either).
unsigned long blind(unsigned long x);
__asm__(".text\n"
	".globl blind\n"
	".type blind, @function\n"
	"blind:\n"
	"	push %rbx\n"
	"	xor %ebx, %ebx\n"
	"	call leaf\n"
	"	pop %rbx\n"
	"	ret\n"
	".size blind, .-blind\n");

NOINLINE unsigned long wide(int d, unsigned long x) {
	volatile unsigned long pad[16];
	pad[d % 16] = x;
	unsigned long r = d > 0 ? wide(d - 1, x + pad[(d + 1) % 16]) : blind(x);
	return r + pad[d % 16];
}

int main(int argc, char **argv) {
	double ms = argc > 1 ? strtod(argv[1], 0) : 1000;
	unsigned long w = 0;
	for (double end = cpu_ms() + ms; cpu_ms() < end;)
		sink += wide(29, w++);
	printf("%lu\n", w);
	return 0;
}

// Hot code made of inlined helpers, built with -O2 -g, for inline frames.
// Usage: inline [MS]: calls num::crunch until MS milliseconds of CPU time (default 300)
// are spent.
#include <cstdio>
#include "cpubudget.h"

namespace num {
static inline unsigned long mixbits(unsigned long v) { return (v ^ (v >> 7)) * 0x9E3779B97F4A7C15ul; }
static inline unsigned long step(unsigned long acc, unsigned long i) { return acc + mixbits(i) % 1000; }
__attribute__((noinline)) unsigned long crunch(unsigned long n) {
	unsigned long acc = 0;
	for (unsigned long i = 0; i < n; i++)
		acc = step(acc, i);
	return acc;
}
} // namespace num

int main(int argc, char **argv) {
	double end = thread_cpu_ms() + arg_ms(argc, argv, 1, 300);
	unsigned long acc = 0;
	do // crunch is pure: an argument that changes keeps GCC from calling it only once
		acc += num::crunch(CPU_CHUNK + (acc & 1));
	while (thread_cpu_ms() < end);
	std::printf("%lu\n", acc);
	return 0;
}

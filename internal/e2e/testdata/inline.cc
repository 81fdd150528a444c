// Hot code made of inlined helpers, built with -O2 -g, for inline frames.
#include <cstdio>
#include <cstdlib>

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
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 1000;
	std::printf("%lu\n", num::crunch(n));
	return 0;
}

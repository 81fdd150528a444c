// C++ with exceptions: recurse DEPTH levels, each in a try block, then burn MS milliseconds
// of CPU at the bottom, throwing and catching an exception every chunk so unwinding tables
// with personality routines and landing pads are in play.
// Usage: exc DEPTH [MS]
#include <cstdio>
#include <stdexcept>
#include "cpubudget.h"

static volatile unsigned long sink;

__attribute__((noinline)) void bottom(double end) {
	while (thread_cpu_ms() < end) {
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i;
		try {
			if (sink & 1) throw std::runtime_error("odd");
			throw std::logic_error("even");
		} catch (const std::exception &e) {
			sink += e.what()[0];
		}
	}
}

__attribute__((noinline)) int level(int depth, double end) {
	try {
		if (depth == 0) {
			bottom(end);
			throw std::runtime_error("done");
		}
		return level(depth - 1, end) + 1;
	} catch (const std::runtime_error &) {
		if (depth > 0) throw;
		return 0;
	}
}

int main(int argc, char **argv) {
	int depth = argc > 1 ? atoi(argv[1]) : 500;
	double end = thread_cpu_ms() + arg_ms(argc, argv, 2, 500);
	try {
		level(depth, end);
	} catch (const std::exception &e) {
		std::printf("caught %s\n", e.what());
	}
	return 0;
}

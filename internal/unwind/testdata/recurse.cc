// C++ with exceptions and a recursion of depth 500. Runs until argv[1] seconds pass.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

static volatile long sink;

__attribute__((noinline)) long recurse(int depth) {
	if (depth == 0) {
		for (int i = 0; i < 20000; i++) sink += i;
		if (sink % 3 == 0) throw std::runtime_error("x");
		return sink;
	}
	long r = recurse(depth - 1);
	sink += r;
	return r + 1;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 1;
	auto t0 = std::chrono::steady_clock::now();
	std::printf("ready\n");
	std::fflush(stdout);
	while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {
		try {
			recurse(500);
		} catch (const std::exception &) {
			sink++;
		}
	}
	return 0;
}

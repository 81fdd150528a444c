// C++ with namespaces, classes and templates, for demangling.
// Built by the tests with: g++ -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline
// Usage: mangled MS: Shape::area runs for MS milliseconds of CPU time.
#include <cstdio>
#include "cpubudget.h"

namespace geometry {
volatile unsigned long sink;
void touch() { sink++; } // keeps callers from being frameless leaves
template <typename T> struct Accumulator {
	T total = 0;
	void add(T v) {
		total += v;
		sink += (unsigned long)v;
		touch();
	}
};
class Shape {
public:
	unsigned long area(double ms) {
		Accumulator<unsigned long> acc;
		double end = thread_cpu_ms() + ms;
		do
			for (unsigned long i = 0; i < CPU_CHUNK / 8; i++) acc.add(i);
		while (thread_cpu_ms() < end);
		return acc.total;
	}
};
} // namespace geometry

int main(int argc, char **argv) {
	geometry::Shape s;
	std::printf("%lu\n", s.area(arg_ms(argc, argv, 1, 300)));
	return 0;
}

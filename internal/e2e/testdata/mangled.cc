// C++ with namespaces, classes and templates, for demangling.
// Built by the tests with: g++ -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline
#include <cstdio>
#include <cstdlib>

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
	unsigned long area(unsigned long n) {
		Accumulator<unsigned long> acc;
		for (unsigned long i = 0; i < n; i++) acc.add(i);
		return acc.total;
	}
};
} // namespace geometry

int main(int argc, char **argv) {
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 100000000UL;
	geometry::Shape s;
	std::printf("%lu\n", s.area(n));
	return 0;
}

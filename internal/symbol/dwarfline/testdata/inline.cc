// Inlining fixture for the DWARF tests: built with g++ -O2 -g.
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace geo {

struct Point {
	double x, y;
};

static inline double sq(double v) { return v * v; }

static inline double norm2(const Point &p) { return sq(p.x) + sq(p.y); }

template <typename T>
static inline T clampv(T v, T lo, T hi) {
	if (v < lo)
		return lo;
	if (v > hi)
		return hi;
	return v;
}

__attribute__((noinline)) double total(const std::vector<Point> &pts) {
	double s = 0;
	for (const Point &p : pts)
		s += clampv(norm2(p), 0.0, 1e6);
	return s;
}

} // namespace geo

__attribute__((noinline)) static int mix(int a) {
	int r = 0;
	for (int i = 0; i < a; i++)
		r += (i * 2654435761u) >> 7;
	return r;
}

int main(int argc, char **argv) {
	std::vector<geo::Point> pts;
	for (int i = 0; i < 1000 + argc; i++)
		pts.push_back({double(i % 37), double(rand() % 101)});
	double t = geo::total(pts);
	std::printf("%f %d\n", t, mix(argc * 1000));
	return 0;
}

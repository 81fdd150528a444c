// Sorts arrays with qsort over and over, so samples land in libc's internal (static)
// merge sort functions, named only by libc's separate debug file.
// Usage: qsort [MS]: sorts until MS milliseconds of CPU time (default 300) are spent.
#include "cpubudget.h"
static int cmp(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}
int main(int argc, char **argv) {
	double end = thread_cpu_ms() + arg_ms(argc, argv, 1, 300);
	static int v[100000];
	for (unsigned r = 0; thread_cpu_ms() < end; r++) {
		unsigned s = r * 2654435761u;
		for (int i = 0; i < 100000; i++)
			v[i] = (int)(s = s * 1103515245u + 12345u);
		qsort(v, 100000, sizeof v[0], cmp);
	}
	return 0;
}

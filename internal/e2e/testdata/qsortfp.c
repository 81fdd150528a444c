// qsort with a comparator, built -O2 -fomit-frame-pointer: libc and this program keep no
// frame pointers, so only .eh_frame unwinding finds the comparator's callers.
// Usage: qsortfp [MS]: sorts until MS milliseconds of CPU time (default 300) are spent.
#include <stdlib.h>
#include "cpubudget.h"
static int cmp(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}
__attribute__((noinline)) void sort_round(int *v, int n, unsigned s) {
	for (int i = 0; i < n; i++)
		v[i] = (int)(s = s * 1103515245u + 12345u);
	qsort(v, n, sizeof v[0], cmp);
}
int main(int argc, char **argv) {
	static int v[100000];
	double end = thread_cpu_ms() + arg_ms(argc, argv, 1, 300);
	for (unsigned r = 0; thread_cpu_ms() < end; r++)
		sort_round(v, 100000, r * 2654435761u);
	return 0;
}

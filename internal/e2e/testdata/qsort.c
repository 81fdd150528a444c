// Sorts arrays with qsort over and over, so samples land in libc's internal (static)
// merge sort functions, named only by libc's separate debug file.
#include <stdlib.h>
static int cmp(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}
int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	static int v[100000];
	for (int r = 0; r < rounds; r++) {
		unsigned s = r * 2654435761u;
		for (int i = 0; i < 100000; i++)
			v[i] = (int)(s = s * 1103515245u + 12345u);
		qsort(v, 100000, sizeof v[0], cmp);
	}
	return 0;
}

/* Fixture for TestRealBinary; built with gcc -O2 -g at test time. */
#include <stdlib.h>

static inline long mix(long s, long i) {
	return s * 31 + (i ^ (s >> 7));
}

__attribute__((noinline)) long work(long n, int mode) {
	long s = 0;
	for (long i = 0; i < n; i++) {
		switch ((i + mode) & 7) {
		case 0: s = mix(s, i); break;
		case 1: s += i * 3; break;
		case 2: s ^= i << 2; break;
		case 3: s -= i; break;
		case 4: s = mix(s, i + 1); break;
		case 5: s += (s >> 3); break;
		default: s++; break;
		}
	}
	if (s == 42)
		abort();
	return s;
}

int main(int argc, char **argv) {
	(void)argv;
	return (int)work(1000000L * argc, argc);
}

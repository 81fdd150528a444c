/* Fixture for the objdump comparison test; built with gcc -O2 at test time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) long inner(long x) {
	long s = 0;
	for (long i = 0; i < x; i++)
		s += i * i ^ (s >> 3);
	return s;
}

__attribute__((noinline)) int dispatch(int op, int a, int b) {
	switch (op) {
	case 0: return a + b;
	case 1: return a - b;
	case 2: return a * b;
	case 3: return b ? a / b : 0;
	case 4: return a << (b & 31);
	case 5: return a >> (b & 31);
	case 6: return a ^ b;
	case 7: return a | b;
	case 8: return a & b;
	case 9: return -a;
	default: return 0;
	}
}

__attribute__((noinline)) double fsum(const double *v, int n) {
	double s = 0;
	for (int i = 0; i < n; i++)
		s += v[i] * 1.5;
	return s;
}

__attribute__((noinline)) void vadd(float *restrict d, const float *restrict a, const float *restrict b, int n) {
	for (int i = 0; i < n; i++)
		d[i] = a[i] + b[i];
}

__attribute__((noinline)) unsigned long hash(const char *s) {
	unsigned long h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

struct node { struct node *next; long v; };

__attribute__((noinline)) long walk(struct node *n) {
	long s = 0;
	for (; n; n = n->next)
		s += n->v;
	return s;
}

__attribute__((noinline)) char *dup(const char *s) {
	size_t n = strlen(s);
	char *p = malloc(n + 1);
	if (!p)
		abort();
	memcpy(p, s, n + 1);
	return p;
}

int main(int argc, char **argv) {
	long t = inner(argc * 1000);
	for (int i = 0; i < 12; i++)
		t += dispatch(i, argc, (int)t);
	double v[16];
	float a[64], b[64], d[64];
	for (int i = 0; i < 16; i++)
		v[i] = i;
	for (int i = 0; i < 64; i++) {
		a[i] = i;
		b[i] = 2 * i;
	}
	vadd(d, a, b, 64);
	t += (long)fsum(v, 16) + (long)d[3];
	struct node n2 = {0, 2}, n1 = {&n2, 1};
	t += walk(&n1);
	char *p = dup(argv[0]);
	t += hash(p);
	free(p);
	printf("%ld\n", t);
	return 0;
}

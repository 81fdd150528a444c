#include <stdio.h>
#include <stdlib.h>

extern int lib_square(int);

__attribute__((noinline)) int leaf_add(int a, int b) { return a * 3 + b; }

__attribute__((noinline)) static int static_mix(int x) { return leaf_add(x, x + 1) ^ 0x55; }

#ifdef OTHER_SECTION
__attribute__((noinline, section("othertext"))) int far_away(int x) { return static_mix(x) + 7; }
#else
__attribute__((noinline)) int far_away(int x) { return static_mix(x) + 7; }
#endif

int main(int argc, char **argv) {
	int v = far_away(argc);
#ifdef WITH_LIB
	v += lib_square(v);
	printf("lib_square %p\n", (void *)lib_square);
#endif
	printf("leaf_add %p\nstatic_mix %p\nfar_away %p\nmain %p\n", (void *)leaf_add, (void *)static_mix, (void *)far_away, (void *)main);
	printf("end\n");
	fflush(stdout);
	getchar(); /* wait so the test can read /proc/PID/maps */
	return v & 1;
}

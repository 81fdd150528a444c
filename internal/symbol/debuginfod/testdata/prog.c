#include <stdio.h>

__attribute__((noinline)) static int scale(int x) { return x * 5 + 3; }

int main(int argc, char **argv) {
	printf("%d\n", scale(argc));
	return 0;
}

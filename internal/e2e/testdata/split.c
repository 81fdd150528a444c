// A program for the separate-debug-file tests: the tests build it with -g, split its debug
// info off with objcopy and strip it, so names and lines can only come from the debug file.
volatile unsigned long sink;
void split_touch(void) { sink++; }
void split_hot(unsigned long n) {
	for (unsigned long i = 0; i < n; i++)
		sink += i * 7;
	split_touch();
}
int main(int argc, char **argv) {
	(void)argv;
	split_hot(argc > 1 ? 300000000UL : 1000);
	return 0;
}

// N threads burning CPU until a line arrives on standard input; "ready" once they run.
// Usage: spinwait N
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;
static volatile int done;

void spin_until(void) {
	while (!done)
		for (unsigned long i = 0; i < 100000; i++)
			sink += i;
}

static void *worker(void *arg) {
	spin_until();
	return arg;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 2;
	if (n < 1 || n > 64) n = 2;
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], 0, worker, 0);
	printf("ready\n");
	fflush(stdout);
	char line[16];
	fgets(line, sizeof line, stdin);
	done = 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], 0);
	return 0;
}

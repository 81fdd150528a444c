// N threads, each burning MS milliseconds of its own CPU time in spin(), for the tests
// and benchmarks of lost samples at high rates. Usage: spin N MS
#include <pthread.h>
#include <stdio.h>
#include "cpubudget.h"

volatile unsigned long sink;
static double budget;

void spin(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++)
			sink += i;
	while (thread_cpu_ms() < end);
}

static void *worker(void *arg) {
	spin(budget);
	return arg;
}

int main(int argc, char **argv) {
	int n = (int)arg_ms(argc, argv, 1, 2);
	budget = arg_ms(argc, argv, 2, 1000);
	if (n < 1 || n > 4096) n = 1;
	pthread_t t[4096];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], 0, worker, 0);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], 0);
	printf("spin done\n");
	return 0;
}

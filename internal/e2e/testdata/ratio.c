// Two named threads doing 1:2 amounts of the same loop, then a main -> outer -> inner chain.
// Built by the tests with: gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -pthread
// Usage: ratio MS [forever]: work_a runs for MS milliseconds of its thread's CPU time and
// work_b for 2*MS, then inner for MS/4; with "forever" the threads loop until killed (used
// for attaching with -p).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cpubudget.h"

volatile unsigned long sink;

// A call at the end keeps each worker from being a leaf function, which GCC builds without
// a frame (hiding its caller from frame-pointer unwinding).
void touch(void) { sink++; }

void work_a(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++)
			sink += i;
	while (thread_cpu_ms() < end);
	touch();
}
void work_b(double ms) {
	double end = thread_cpu_ms() + 2 * ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++)
			sink += i;
	while (thread_cpu_ms() < end);
	touch();
}
void inner(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++)
			sink ^= i;
	while (thread_cpu_ms() < end);
	touch();
}
void outer(double ms) { inner(ms); sink++; }

static double budget;
static int forever;

static void *thread_a(void *arg) {
	do work_a(budget); while (forever);
	return arg;
}
static void *thread_b(void *arg) {
	do work_b(budget); while (forever);
	return arg;
}

int main(int argc, char **argv) {
	budget = arg_ms(argc, argv, 1, 1000);
	forever = argc > 2 && strcmp(argv[2], "forever") == 0;
	pthread_t a, b;
	pthread_create(&a, 0, thread_a, 0);
	pthread_setname_np(a, "worker-a");
	pthread_create(&b, 0, thread_b, 0);
	pthread_setname_np(b, "worker-b");
	if (forever) {
		printf("threads named\n");
		fflush(stdout);
	}
	pthread_join(a, 0);
	pthread_join(b, 0);
	outer(budget / 4);
	printf("ratio done\n");
	return 0;
}

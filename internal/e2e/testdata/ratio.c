// Two named threads doing 1:2 amounts of the same loop, then a main -> outer -> inner chain.
// Built by the tests with: gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -pthread
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile unsigned long sink;

// A call at the end keeps each worker from being a leaf function, which GCC builds without
// a frame (hiding its caller from frame-pointer unwinding).
void touch(void) { sink++; }

void work_a(unsigned long n) {
	for (unsigned long i = 0; i < n; i++)
		sink += i;
	touch();
}
void work_b(unsigned long n) {
	for (unsigned long i = 0; i < 2 * n; i++)
		sink += i;
	touch();
}
void inner(unsigned long n) {
	for (unsigned long i = 0; i < n; i++)
		sink ^= i;
	touch();
}
void outer(unsigned long n) { inner(n); sink++; }

static unsigned long n;
static int forever;

static void *thread_a(void *arg) {
	do work_a(n); while (forever);
	return arg;
}
static void *thread_b(void *arg) {
	do work_b(n); while (forever);
	return arg;
}

int main(int argc, char **argv) {
	n = argc > 1 ? strtoul(argv[1], 0, 10) : 100000000UL;
	forever = argc > 2 && strcmp(argv[2], "forever") == 0;
	pthread_t a, b;
	pthread_create(&a, 0, thread_a, 0);
	pthread_setname_np(a, "worker-a");
	pthread_create(&b, 0, thread_b, 0);
	pthread_setname_np(b, "worker-b");
	pthread_join(a, 0);
	pthread_join(b, 0);
	outer(n);
	printf("ratio done\n");
	return 0;
}

// latethreads.c: a thread started while its process switches too often for a stack at
// each wait, for the stacks of a new thread's first waits.
//
//   latethreads ROUNDS   two threads hand a byte back and forth through two pipes ROUNDS
//                        times (tens of thousands of switches a second); once a third of
//                        the rounds are done, main starts a thread called late that sleeps
//                        100 ms in late_nap, once, and ends; main prints "late TID".
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long rounds;
static volatile long done;

__attribute__((noinline)) void pingpong_wait(int fd) {
	char c;
	if (read(fd, &c, 1) != 1)
		exit(2);
}

static void *pong(void *arg) {
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		pingpong_wait(ab[0]);
		if (write(ba[1], "b", 1) != 1)
			exit(2);
	}
	return NULL;
}

static void *ping(void *arg) {
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		if (write(ab[1], "a", 1) != 1)
			exit(2);
		pingpong_wait(ba[0]);
		done = i;
	}
	return NULL;
}

__attribute__((noinline)) void late_nap(void) {
	struct timespec ts = {0, 100 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

static void *late(void *arg) {
	(void)arg;
	printf("late %d\n", (int)gettid());
	fflush(stdout);
	late_nap();
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2 || pipe(ab) != 0 || pipe(ba) != 0)
		return 1;
	rounds = atol(argv[1]);
	pthread_t a, b, l;
	pthread_create(&a, NULL, pong, NULL);
	pthread_create(&b, NULL, ping, NULL);
	struct timespec poll = {0, 1000 * 1000};
	while (done < rounds / 3)
		nanosleep(&poll, NULL);
	pthread_create(&l, NULL, late, NULL);
	pthread_setname_np(l, "late");
	pthread_join(l, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}

/* Spends its time in a signal handler: stacks go handler -> __restore_rt -> spin -> main. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile long sink;

static void handler(int sig) {
	(void)sig;
	for (long i = 0; i < 2000000; i++) sink += i;
}

__attribute__((noinline)) static void spin(void) {
	for (int i = 0; i < 1000; i++) sink++;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 1;
	struct sigaction sa = {0};
	sa.sa_handler = handler;
	sigaction(SIGALRM, &sa, 0);
	struct itimerval it = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_REAL, &it, 0);
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("ready\n");
	fflush(stdout);
	do {
		spin();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}

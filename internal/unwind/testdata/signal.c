/*
 * Spends about half its CPU time in a signal handler: stacks go handler -> __restore_rt ->
 * spin -> main. The timer counts the process's CPU time (it ticks at the kernel's HZ, every
 * 1 to 4 ms) and the handler runs for 2 ms of it, so the share spent in the handler does not
 * depend on how fast or how busy the machine is.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile long sink;

static long cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void handler(int sig) {
	(void)sig;
	long end = cpu_ns() + 2000000;
	do {
		for (long i = 0; i < 20000; i++) sink += i;
	} while (cpu_ns() < end);
}

__attribute__((noinline)) static void spin(void) {
	for (int i = 0; i < 1000; i++) sink++;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 1;
	struct sigaction sa = {0};
	sa.sa_handler = handler;
	sigaction(SIGPROF, &sa, 0);
	struct itimerval it = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_PROF, &it, 0);
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

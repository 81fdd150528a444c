// bursts.c: threads whose time on CPU the kernel's schedstat gives, for the on-CPU and
// runnable times of stax threads.
//
//   bursts spin MS       the main thread alone burns MS ms of its CPU time; it wakes nobody.
//   bursts switch MS     a thread called burster runs ~50 us of CPU, sleeps ~50 us, and so on
//                        until it has run MS ms; then it prints
//                        "burster TID on_cpu_ns NS" from /proc/self/task/TID/schedstat's first
//                        field (time on CPU), read as its last act.
//   bursts children N MS N child processes at once each burn MS ms of CPU and exit; the
//                        parent waits for each (in waitid), and once it has exited, before
//                        reaping it, prints "child PID on_cpu_ns NS runnable_ns NS" from its
//                        schedstat (time on CPU, time waiting on a run queue): its whole
//                        life's, its exit included.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) void burn_ns(double ns) {
	double end = cpu_ns() + ns;
	while (cpu_ns() < end)
		for (int i = 0; i < 100; i++)
			sink += i;
}

// schedstat reads field (0: on CPU, 1: runnable) of a schedstat file, in ns.
static unsigned long long schedstat(const char *path, int field) {
	FILE *f = fopen(path, "r");
	unsigned long long v[3] = {0, 0, 0};
	if (!f || fscanf(f, "%llu %llu %llu", &v[0], &v[1], &v[2]) != 3)
		exit(3);
	fclose(f);
	return v[field];
}

static double budget_ms;

__attribute__((noinline)) void nap_us(long us) {
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

static void *burster(void *arg) {
	(void)arg;
	double end = cpu_ns() + budget_ms * 1e6;
	while (cpu_ns() < end) {
		burn_ns(50e3);
		nap_us(50);
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)gettid());
	unsigned long long on = schedstat(path, 0);
	printf("burster %d on_cpu_ns %llu\n", (int)gettid(), on);
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc < 3)
		return 1;
	if (strcmp(argv[1], "spin") == 0) {
		burn_ns(atof(argv[2]) * 1e6);
		return 0;
	}
	if (strcmp(argv[1], "switch") == 0) {
		budget_ms = atof(argv[2]);
		pthread_t t;
		pthread_create(&t, NULL, burster, NULL);
		pthread_setname_np(t, "burster");
		pthread_join(t, NULL);
		return 0;
	}
	if (strcmp(argv[1], "children") == 0 && argc == 4) {
		int n = atoi(argv[2]);
		double ms = atof(argv[3]);
		for (int i = 0; i < n; i++) {
			pid_t pid = fork();
			if (pid < 0)
				return 1;
			if (pid == 0) {
				burn_ns(ms * 1e6);
				_exit(0);
			}
		}
		for (int i = 0; i < n; i++) {
			siginfo_t si;
			memset(&si, 0, sizeof si);
			if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) != 0)
				return 1;
			char path[64];
			snprintf(path, sizeof path, "/proc/%d/schedstat", (int)si.si_pid);
			unsigned long long on = schedstat(path, 0), runnable = schedstat(path, 1);
			printf("child %d on_cpu_ns %llu runnable_ns %llu\n", (int)si.si_pid, on, runnable);
			fflush(stdout);
			if (waitpid(si.si_pid, NULL, 0) < 0)
				return 1;
		}
		return 0;
	}
	return 1;
}

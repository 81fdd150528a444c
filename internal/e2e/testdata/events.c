// Workloads for sampling events other than cpu-clock (stax record -e):
//
//   events faults PAGES MS [wait]
//                            touch_pages writes to PAGES fresh pages (a page fault each),
//                            then spin burns MS milliseconds of CPU time (no faults); with
//                            wait it then prints "ready" and reads a line before it exits
//   events yield N           yield_loop calls sched_yield N times while a second thread,
//                            on the same CPU, yields too: each call is a context switch
//   events writes N SIZE [wait]
//                            write_dev_null writes N times to /dev/null, SIZE bytes the
//                            first time and a byte more each time after; with wait it then
//                            prints "ready" and reads a line before it exits
//   events bigsmall N        big_writes writes 3000 bytes N times to /dev/null, then
//                            small_writes 1000 bytes N times: as many writes, a third of
//                            the bytes
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "cpubudget.h"

__attribute__((noinline)) void touch_pages(long pages) {
	char *p = mmap(0, (size_t)pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	for (long i = 0; i < pages; i++)
		p[i * 4096] = 1;
	munmap(p, (size_t)pages * 4096);
}

__attribute__((noinline)) void spin(double ms) {
	volatile unsigned long x = 0;
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < CPU_CHUNK; i++)
			x += i;
}

static atomic_int stop;

static void pin(int cpu) {
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof s, &s);
}

static int cpu;

static void *partner(void *arg) {
	pin(cpu);
	while (!atomic_load(&stop))
		sched_yield();
	return 0;
}

__attribute__((noinline)) void yield_loop(long n) {
	for (long i = 0; i < n; i++)
		sched_yield();
}

__attribute__((noinline)) void write_dev_null(long n, long size) {
	int fd = open("/dev/null", O_WRONLY);
	char *buf = calloc(1, (size_t)(size + n));
	if (fd < 0 || !buf) {
		perror("write_dev_null");
		exit(1);
	}
	for (long i = 0; i < n; i++)
		if (write(fd, buf, (size_t)(size + i)) != size + i)
			exit(1);
	close(fd);
	free(buf);
}

__attribute__((noinline)) void writes_of(int fd, const char *buf, long n, size_t size) {
	for (long i = 0; i < n; i++)
		if (write(fd, buf, size) != (ssize_t)size)
			exit(1);
}

__attribute__((noinline)) void big_writes(int fd, const char *buf, long n) { writes_of(fd, buf, n, 3000); }

__attribute__((noinline)) void small_writes(int fd, const char *buf, long n) { writes_of(fd, buf, n, 1000); }

static void wait_line(void) {
	printf("ready\n");
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		exit(0);
}

int main(int argc, char **argv) {
	if (argc >= 4 && strcmp(argv[1], "writes") == 0) {
		write_dev_null(atol(argv[2]), atol(argv[3]));
		if (argc >= 5 && strcmp(argv[4], "wait") == 0)
			wait_line();
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "bigsmall") == 0) {
		static char buf[3000];
		int fd = open("/dev/null", O_WRONLY);
		if (fd < 0) {
			perror("/dev/null");
			return 1;
		}
		big_writes(fd, buf, atol(argv[2]));
		small_writes(fd, buf, atol(argv[2]));
		close(fd);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "faults") == 0) {
		touch_pages(atol(argv[2]));
		spin(strtod(argv[3], 0));
		if (argc >= 5 && strcmp(argv[4], "wait") == 0) {
			printf("ready\n");
			fflush(stdout);
			char line[16];
			if (!fgets(line, sizeof line, stdin))
				return 0;
		}
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "yield") == 0) {
		cpu = sched_getcpu();
		pin(cpu);
		pthread_t t;
		pthread_create(&t, 0, partner, 0);
		yield_loop(atol(argv[2]));
		atomic_store(&stop, 1);
		pthread_join(t, 0);
		return 0;
	}
	fprintf(stderr, "usage: events faults PAGES MS [wait] | events yield N | events writes N SIZE [wait] | events bigsmall N\n");
	return 2;
}

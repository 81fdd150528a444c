/*
 * ittflood.c - many JIT Profiling API loads from many threads, optionally
 * with a slow file system under the collector's dump file, timing every
 * NotifyEvent call.
 *
 * Usage:
 *   ittflood flood THREADS CALLS   THREADS threads report CALLS loads in
 *                                  all (method flood_<thread>_<i>, 64 bytes
 *                                  of code, 4 line entries), then SHUTDOWN
 *   ittflood fork CALLS            the main thread reports CALLS loads
 *                                  pre_0_<i>; 4 threads report CALLS loads
 *                                  par_<t>_<i> each while the main thread
 *                                  forks; the child's 4 threads report CALLS
 *                                  loads child_<t>_<i> each; both processes
 *                                  end by returning from main (no SHUTDOWN)
 *
 * ITTFLOOD_FAILURES_OK=1: a NotifyEvent that returns 0 (the collector gave its
 * file up) is not fatal.
 * Environment: ITTFLOOD_SLOW_US=U makes every write(2) to a jit-*.dump file
 * take U microseconds longer, and ITTFLOOD_SLOW_MBPS=M adds the time that
 * many bytes take at M MB/s: a stand-in for a slow or stalling file system.
 * It works by defining write() in this program (linked with -rdynamic), so
 * that the collector, which calls write through the PLT, gets this one; the
 * collector itself is unchanged.
 *
 * Output:
 *   calls n=N threads=T mean_ns=.. p50_ns=.. p99_ns=.. max_ns=..
 *   slow writes=W bytes=B          (writes that went through the slow path)
 *   fork pid=C                     (fork mode)
 *   pid=P
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ittstub.h"

/* ---- the slow file system ---- */

static long slow_us = -1;       /* -1: not read yet */
static double slow_mbps;
static unsigned long long slow_writes, slow_bytes;

static void slow_init(void)
{
	const char *u = getenv("ITTFLOOD_SLOW_US");
	const char *m = getenv("ITTFLOOD_SLOW_MBPS");

	slow_mbps = m ? atof(m) : 0;
	__atomic_store_n(&slow_us, u ? atol(u) : 0, __ATOMIC_RELEASE);
}

static int is_dump(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;
	const char *base;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	n = (ssize_t)strlen(base);
	return strncmp(base, "jit-", 4) == 0 && n > 5 && strcmp(base + n - 5, ".dump") == 0;
}

ssize_t write(int fd, const void *buf, size_t count)
{
	long us = __atomic_load_n(&slow_us, __ATOMIC_ACQUIRE);

	if (us > 0 || (us == 0 && slow_mbps > 0)) {
		if (is_dump(fd)) {
			double ns = (double)us * 1000;
			struct timespec ts;

			if (slow_mbps > 0)
				ns += (double)count * 1000 / slow_mbps;
			ts.tv_sec = (time_t)(ns / 1e9);
			ts.tv_nsec = (long)(ns - (double)ts.tv_sec * 1e9);
			while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
			}
			__atomic_add_fetch(&slow_writes, 1, __ATOMIC_RELAXED);
			__atomic_add_fetch(&slow_bytes, count, __ATOMIC_RELAXED);
		}
	}
	return syscall(SYS_write, fd, buf, count);
}

/* ---- loads ---- */

static size_t pagesz;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned char *code_area(size_t regions)
{
	size_t bytes = regions * 64, i;
	unsigned char *p = mmap(NULL, bytes + pagesz, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	for (i = 0; i < bytes; i++)
		p[i] = (unsigned char)(i * 7 + 3);
	return p;
}

/* Reports one load and returns how long NotifyEvent took. */
static uint64_t timed_load(uint32_t id, const char *name, unsigned char *addr)
{
	static struct stax_jit_line lines[4] = { { 0, 1 }, { 4, 2 }, { 16, 3 }, { 40, 4 } };
	struct stax_jit_method_load m;
	uint64_t t0;

	memset(&m, 0, sizeof(m));
	m.method_id = id;
	m.method_name = (char *)name;
	m.load_address = addr;
	m.size = 64;
	m.lines = lines;
	m.line_count = 4;
	m.source_file = (char *)"flood.js";
	t0 = now_ns();
	if (!stub_event(STAX_JIT_EV_METHOD_LOAD_FINISHED, &m) && !getenv("ITTFLOOD_FAILURES_OK")) {
		fprintf(stderr, "NotifyEvent failed for %s\n", name);
		exit(1);
	}
	return now_ns() - t0;
}

struct worker {
	const char *prefix;
	int index, calls;
	uint32_t first_id;
	unsigned char *code;    /* 64 bytes per call */
	uint64_t *t;            /* call times */
	pthread_t thread;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char name[64];
	int i;

	for (i = 0; i < w->calls; i++) {
		snprintf(name, sizeof(name), "%s_%d_%d", w->prefix, w->index, i);
		w->t[i] = timed_load(w->first_id + (uint32_t)i, name, w->code + (size_t)i * 64);
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(uint64_t *t, size_t n, int threads)
{
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < n; i++)
		total += t[i];
	qsort(t, n, sizeof(*t), cmp_u64);
	printf("calls n=%zu threads=%d mean_ns=%.0f p50_ns=%llu p99_ns=%llu max_ns=%llu\n", n,
	       threads, n ? (double)total / (double)n : 0.0,
	       n ? (unsigned long long)t[n / 2] : 0ull,
	       n ? (unsigned long long)t[n * 99 / 100] : 0ull,
	       n ? (unsigned long long)t[n - 1] : 0ull);
}

/* Starts threads workers reporting calls loads in all; ids from first_id. */
static struct worker *start(const char *prefix, int threads, int calls, uint32_t first_id,
			    uint64_t *t)
{
	struct worker *ws = calloc((size_t)threads, sizeof(*ws));
	unsigned char *code = code_area((size_t)calls);
	int i, done = 0;

	for (i = 0; i < threads; i++) {
		int n = calls / threads + (i < calls % threads);

		ws[i].prefix = prefix;
		ws[i].index = i;
		ws[i].calls = n;
		ws[i].first_id = first_id + (uint32_t)done;
		ws[i].code = code + (size_t)done * 64;
		ws[i].t = t + done;
		done += n;
		if (pthread_create(&ws[i].thread, NULL, work, &ws[i]) != 0) {
			perror("pthread_create");
			exit(1);
		}
	}
	return ws;
}

static void join(struct worker *ws, int threads)
{
	int i;

	for (i = 0; i < threads; i++)
		pthread_join(ws[i].thread, NULL);
	free(ws);
}

static int flood(int threads, int calls)
{
	uint64_t *t = calloc((size_t)calls, sizeof(*t));
	struct worker *ws;

	if (threads < 1 || calls < threads || !t) {
		fprintf(stderr, "bad arguments\n");
		return 2;
	}
	ws = start("flood", threads, calls, 1, t);
	join(ws, threads);
	stub_event(STAX_JIT_EV_SHUTDOWN, NULL);
	report(t, (size_t)calls, threads);
	printf("slow writes=%llu bytes=%llu\n", slow_writes, slow_bytes);
	printf("pid=%d\n", (int)getpid());
	free(t);
	return 0;
}

static int forked(int calls)
{
	enum { THREADS = 4 };
	uint64_t *t = calloc((size_t)calls * (THREADS + 1), sizeof(*t));
	unsigned char *code = code_area((size_t)calls);
	struct worker *ws;
	char name[64];
	pid_t pid;
	int i, status;

	if (!t || calls < THREADS) {
		fprintf(stderr, "bad arguments\n");
		return 2;
	}
	for (i = 0; i < calls; i++) {
		snprintf(name, sizeof(name), "pre_0_%d", i);
		t[i] = timed_load(0x10000000u + (uint32_t)i, name, code + (size_t)i * 64);
	}
	/* fork while other threads report and the writer has work */
	ws = start("par", THREADS, calls * THREADS, 0x20000000u, t + calls);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		/* the child: only this thread exists here */
		ws = start("child", THREADS, calls * THREADS, 0x30000000u, t);
		join(ws, THREADS);
		report(t, (size_t)calls * THREADS, THREADS);
		return 0;       /* exit: the collector writes what is pending */
	}
	join(ws, THREADS);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "child failed\n");
		return 1;
	}
	report(t, (size_t)calls * (THREADS + 1), THREADS);
	printf("fork pid=%d\n", (int)pid);
	printf("pid=%d\n", (int)getpid());
	return 0;
}

int main(int argc, char **argv)
{
	pagesz = (size_t)sysconf(_SC_PAGESIZE);
	slow_init();
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("initialize %u\n", stub_load());
	if (argc >= 4 && strcmp(argv[1], "flood") == 0)
		return flood(atoi(argv[2]), atoi(argv[3]));
	if (argc >= 3 && strcmp(argv[1], "fork") == 0)
		return forked(atoi(argv[2]));
	fprintf(stderr, "usage: %s flood THREADS CALLS | fork CALLS\n", argv[0]);
	return 2;
}

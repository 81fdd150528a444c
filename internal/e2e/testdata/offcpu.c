// offcpu.c: threads that wait in known ways, for off-CPU time.
//
//   offcpu waits LOOPS   a worker thread waits, per loop, ~700 ms on a mutex another thread
//                        holds (wait_for_lock), sleeps 200 ms (nap), and reads a pipe a third
//                        thread fills after 100 ms (read_pipe): about 1 s off CPU per loop.
//                        It prints the worker's wall clock: "worker wall ms MS".
//                        The holder lets go of the lock in release_lock and the third
//                        thread writes in fill_pipe. The threads run SCHED_FIFO where permitted, so that a loaded
//                        machine does not make their waits longer.
//   offcpu stuck 1       a thread called stuck blocks on a mutex main holds (wait_for_lock);
//                        once it sleeps, main prints "ready", and lets it go when a line
//                        comes on its standard input.
//   offcpu pingpong N    two threads hand a byte back and forth through two pipes N times,
//                        each waiting in pingpong_wait: tens of thousands of switches a
//                        second.
//   offcpu spin MS       four threads pinned to at most two CPUs each burn MS ms of their
//                        own CPU time: each waits for a CPU about as long as it runs.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t want_lock, locked, want_data;
static int fds[2];
static int loops;

__attribute__((noinline)) void wait_for_lock(void) {
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
}

__attribute__((noinline)) void nap(void) { usleep(200 * 1000); }

__attribute__((noinline)) void read_pipe(void) {
	char c;
	if (read(fds[0], &c, 1) != 1)
		exit(2);
}

__attribute__((noinline)) void release_lock(void) {
	pthread_mutex_unlock(&lock);
	__asm__ volatile("" ::: "memory"); // not a tail call: release_lock stays on the stack
}

__attribute__((noinline)) void fill_pipe(void) {
	if (write(fds[1], "x", 1) != 1)
		exit(2);
	__asm__ volatile("" ::: "memory");
}

static void *holder(void *arg) {
	(void)arg;
	for (int i = 0; i < loops; i++) {
		sem_wait(&want_lock);
		pthread_mutex_lock(&lock);
		sem_post(&locked);
		usleep(700 * 1000);
		release_lock();
	}
	return NULL;
}

static void *filler(void *arg) {
	(void)arg;
	for (int i = 0; i < loops; i++) {
		sem_wait(&want_data);
		usleep(100 * 1000);
		fill_pipe();
	}
	return NULL;
}

static double worker_ms; // the worker's wall clock, from its start to the end of its loops

static double now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void *worker(void *arg) {
	(void)arg;
	double start = now_ms();
	for (int i = 0; i < loops; i++) {
		sem_post(&want_lock);
		sem_wait(&locked); // the holder has the lock now
		wait_for_lock();
		nap();
		sem_post(&want_data);
		read_pipe();
	}
	worker_ms = now_ms() - start;
	return NULL;
}

static double cpu_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static pthread_barrier_t start;
static double spin_ms;
static volatile unsigned long sink;

__attribute__((noinline)) void burn(void) {
	double end = cpu_ms() + spin_ms;
	while (cpu_ms() < end)
		for (int i = 0; i < 10000; i++)
			sink += i;
}

static void *spinner(void *arg) {
	(void)arg;
	pthread_setname_np(pthread_self(), "spinner");
	pthread_barrier_wait(&start);
	burn();
	return NULL;
}

static int spin(void) {
	cpu_set_t have, two;
	if (sched_getaffinity(0, sizeof have, &have) != 0)
		return 1;
	CPU_ZERO(&two);
	for (int c = 0, n = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &have)) {
			CPU_SET(c, &two);
			n++;
		}
	if (sched_setaffinity(0, sizeof two, &two) != 0) // the threads inherit it
		return 1;
	pthread_t t[4];
	pthread_barrier_init(&start, NULL, 4);
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, spinner, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static void *stuck(void *arg) {
	(void)arg;
	wait_for_lock();
	return NULL;
}

// asleep says whether thread tid of this process is sleeping (state S).
static int asleep(pid_t tid) {
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static pid_t stuck_tid;

static void *stuck_start(void *arg) {
	__atomic_store_n(&stuck_tid, gettid(), __ATOMIC_SEQ_CST);
	return stuck(arg);
}

static int run_stuck(void) {
	pthread_mutex_lock(&lock);
	pthread_t t;
	pthread_create(&t, NULL, stuck_start, NULL);
	pthread_setname_np(t, "stuck");
	while (!__atomic_load_n(&stuck_tid, __ATOMIC_SEQ_CST) || !asleep(stuck_tid))
		usleep(1000);
	printf("ready\n");
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof line, stdin))
		return 1;
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	return 0;
}

static int pp_ab[2], pp_ba[2];
static long pp_rounds;

__attribute__((noinline)) void pingpong_wait(int fd) {
	char c;
	if (read(fd, &c, 1) != 1)
		exit(2);
}

static void *pong(void *arg) {
	(void)arg;
	for (long i = 0; i < pp_rounds; i++) {
		pingpong_wait(pp_ab[0]);
		if (write(pp_ba[1], "x", 1) != 1)
			exit(2);
	}
	return NULL;
}

static int run_pingpong(long n) {
	pp_rounds = n;
	if (pipe(pp_ab) || pipe(pp_ba))
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, pong, NULL);
	for (long i = 0; i < n; i++) {
		if (write(pp_ab[1], "x", 1) != 1)
			exit(2);
		pingpong_wait(pp_ba[0]);
	}
	pthread_join(t, NULL);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 3)
		return 1;
	if (strcmp(argv[1], "pingpong") == 0)
		return run_pingpong(atol(argv[2]));
	if (strcmp(argv[1], "stuck") == 0)
		return run_stuck();
	if (strcmp(argv[1], "spin") == 0) {
		spin_ms = atof(argv[2]);
		return spin();
	}
	loops = atoi(argv[2]);
	// Each wait should last its time, not its time and a loaded machine's wakeup latency:
	// where permitted, the threads (which inherit it) wake ahead of ordinary ones.
	struct sched_param sp = {.sched_priority = 1};
	sched_setscheduler(0, SCHED_FIFO, &sp);
	if (pipe(fds) != 0)
		return 1;
	sem_init(&want_lock, 0, 0);
	sem_init(&locked, 0, 0);
	sem_init(&want_data, 0, 0);
	pthread_t h, f, w;
	pthread_create(&h, NULL, holder, NULL);
	pthread_create(&f, NULL, filler, NULL);
	pthread_create(&w, NULL, worker, NULL);
	pthread_setname_np(h, "holder");
	pthread_setname_np(f, "filler");
	pthread_setname_np(w, "worker");
	pthread_join(w, NULL);
	pthread_join(h, NULL);
	pthread_join(f, NULL);
	printf("worker wall ms %.3f\n", worker_ms);
	return 0;
}

/*
 * ittpair.c - what one ITT task costs its caller: THREADS threads each time
 * __itt_task_begin + __itt_task_end pairs for SECONDS seconds, with GAP rounds
 * of arithmetic between pairs, through the library named by
 * INTEL_LIBITTNOTIFY64 (loaded as ittapi's static part loads it).  Without
 * it the pairs are skipped, as the static part skips them, and what is timed
 * is the clock alone.
 *
 *   ittpair THREADS SECONDS GAP
 *
 * Prints "pairs N p50_ns A p99_ns B max_ns C": each pair's time is the
 * CLOCK_MONOTONIC difference around it (the clock's own cost included),
 * kept in 1 ns buckets up to 100 us.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../stax_itt.h"

#define BUCKETS 100000 /* ns */

typedef void (*task_begin_fn)(const stax_itt_domain *, stax_itt_id, stax_itt_id, stax_itt_string_handle *);
typedef void (*task_end_fn)(const stax_itt_domain *);
typedef void (*api_init_fn)(stax_itt_global *, int);

static task_begin_fn task_begin;
static task_end_fn task_end;

static stax_itt_api_info api_list[] = {
	{ "__itt_task_begin", (void **)&task_begin, NULL, NULL, 0x100 },
	{ "__itt_task_end", (void **)&task_end, NULL, NULL, 0x100 },
	{ NULL, NULL, NULL, NULL, 0 },
};
static stax_itt_global global = {
	.magic = STAX_ITT_MAGIC,
	.version_major = 3,
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.api_list_ptr = api_list,
};

static stax_itt_domain dom = { .flags = 1, .nameA = "ittpair" };
static stax_itt_string_handle pair_name = { .strA = "pair" };
static int gap;
static volatile int stop;
static volatile uint64_t sink;

struct hist {
	uint64_t n[BUCKETS + 1]; /* the last: BUCKETS ns or more */
	uint64_t max;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg)
{
	struct hist *h = arg;
	stax_itt_id none = { 0, 0, 0 };
	uint64_t x = (uint64_t)(uintptr_t)arg;

	while (!stop) {
		uint64_t t0 = now_ns(), d;

		if (task_begin) {
			task_begin(&dom, none, none, &pair_name);
			task_end(&dom);
		}
		d = now_ns() - t0;
		h->n[d < BUCKETS ? d : BUCKETS]++;
		if (d > h->max)
			h->max = d;
		for (int i = 0; i < gap; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	}
	sink = x;
	return NULL;
}

/* at is the ns of the q-th quantile of h (q in [0, 1]). */
static uint64_t at(const struct hist *h, uint64_t total, double q)
{
	uint64_t want = (uint64_t)(q * (double)total), seen = 0;

	for (int i = 0; i <= BUCKETS; i++) {
		seen += h->n[i];
		if (seen > want)
			return (uint64_t)i;
	}
	return BUCKETS;
}

int main(int argc, char **argv)
{
	const char *lib = getenv("INTEL_LIBITTNOTIFY64");
	struct timespec ts;
	struct hist *hs, *all;
	pthread_t *th;
	uint64_t total = 0;
	double secs;
	int n;

	if (argc != 4) {
		fprintf(stderr, "usage: ittpair THREADS SECONDS GAP\n");
		return 2;
	}
	n = atoi(argv[1]);
	secs = atof(argv[2]);
	gap = atoi(argv[3]);
	if (n < 1 || secs <= 0 || gap < 0) {
		fprintf(stderr, "ittpair: THREADS >= 1, SECONDS > 0, GAP >= 0\n");
		return 2;
	}
	if (lib && *lib) {
		void *h = dlopen(lib, RTLD_NOW);
		api_init_fn init = h ? (api_init_fn)dlsym(h, "__itt_api_init") : NULL;

		if (init)
			init(&global, -1);
	}
	if (!task_begin || !task_end)
		task_begin = NULL, task_end = NULL;
	th = calloc(n, sizeof *th);
	hs = calloc(n, sizeof *hs);
	all = calloc(1, sizeof *all);
	if (!th || !hs || !all)
		return 1;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, &hs[i]);
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	stop = 1;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		for (int b = 0; b <= BUCKETS; b++) {
			all->n[b] += hs[i].n[b];
			total += hs[i].n[b];
		}
		if (hs[i].max > all->max)
			all->max = hs[i].max;
	}
	printf("pairs %llu p50_ns %llu p99_ns %llu max_ns %llu\n", (unsigned long long)total,
	       (unsigned long long)at(all, total, 0.5), (unsigned long long)at(all, total, 0.99),
	       (unsigned long long)all->max);
	return 0;
}

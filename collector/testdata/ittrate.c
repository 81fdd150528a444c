/*
 * ittrate.c - THREADS threads do units of work for SECONDS seconds, each
 * unit inside an ITT task (begin and end through the library named by
 * INTEL_LIBITTNOTIFY64, loaded as ittapi's static part loads it; without
 * it, or when it fills nothing, the calls are skipped as the static part
 * skips them).  A unit is WORK rounds of arithmetic: pick WORK so that the
 * threads together make about 1 M units (tasks) per second.
 *
 *   ittrate THREADS SECONDS WORK
 *
 * Prints "units N per_sec R tasks T": units done, units per second of
 * wall time (the work rate, which does not depend on how long a unit takes
 * here), and tasks reported to the collector (0 without one).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../stax_itt.h"

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

static stax_itt_domain dom = { .flags = 1, .nameA = "ittrate" };
static stax_itt_string_handle unit_name = { .strA = "unit" };
static int work;
static volatile int stop;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct count {
	uint64_t units;
	char pad[56];
};

static void *worker(void *arg)
{
	struct count *c = arg;
	stax_itt_id none = { 0, 0, 0 };
	uint64_t x = (uint64_t)(uintptr_t)arg;

	while (!stop) {
		if (task_begin)
			task_begin(&dom, none, none, &unit_name);
		for (int i = 0; i < work; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (task_end)
			task_end(&dom);
		c->units++;
	}
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *lib = getenv("INTEL_LIBITTNOTIFY64");
	int n;
	double secs;
	pthread_t *th;
	struct count *counts;
	uint64_t start, units = 0;
	struct timespec ts;

	if (argc != 4) {
		fprintf(stderr, "usage: ittrate THREADS SECONDS WORK\n");
		return 2;
	}
	n = atoi(argv[1]);
	secs = atof(argv[2]);
	work = atoi(argv[3]);
	if (lib && *lib) {
		void *h = dlopen(lib, RTLD_NOW);
		api_init_fn init = h ? (api_init_fn)dlsym(h, "__itt_api_init") : NULL;

		if (init)
			init(&global, -1);
	}
	if (!task_begin || !task_end)
		task_begin = NULL, task_end = NULL;
	th = calloc(n, sizeof *th);
	counts = calloc(n, sizeof *counts);
	start = now_ns();
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, &counts[i]);
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	stop = 1;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		units += counts[i].units;
	}
	printf("units %llu per_sec %.0f tasks %llu\n", (unsigned long long)units,
	       (double)units * 1e9 / (double)(now_ns() - start), task_begin ? (unsigned long long)units : 0ull);
	return 0;
}

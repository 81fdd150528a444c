/*
 * itttasks.c - drives the collector's ITT part as ittapi's static part
 * does (an ITT global and API list, __itt_api_init from the library named
 * by INTEL_LIBITTNOTIFY64), from many threads at once.
 *
 *   itttasks THREADS ITERATIONS DEPTH join|exit
 *
 * Each thread runs ITERATIONS frames of domain itttasks, each holding DEPTH
 * nested tasks (named a, b, c by level) ended innermost first, then one
 * marker m.  join: the threads are
 * joined before main runs them too, timed; exit: main exits while they
 * run.  Prints "pid P filled N" (N: API entries the library filled), and
 * in join mode the mean cost of a task on the main thread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../stax_itt.h"

typedef void (*task_begin_fn)(const stax_itt_domain *, stax_itt_id, stax_itt_id, stax_itt_string_handle *);
typedef void (*task_end_fn)(const stax_itt_domain *);
typedef void (*marker_fn)(const stax_itt_domain *, stax_itt_id, stax_itt_string_handle *, int);
typedef void (*frame_fn)(const stax_itt_domain *, stax_itt_id *);
typedef void (*api_init_fn)(stax_itt_global *, int);

static task_begin_fn task_begin;
static task_end_fn task_end;
static marker_fn marker;
static frame_fn frame_begin, frame_end;
static void *other;

static stax_itt_api_info api_list[] = {
	{ "__itt_task_begin", (void **)&task_begin, NULL, NULL, 0x100 },
	{ "__itt_task_end", (void **)&task_end, NULL, NULL, 0x100 },
	{ "__itt_marker", (void **)&marker, NULL, NULL, 0x100 },
	{ "__itt_frame_begin_v3", (void **)&frame_begin, NULL, NULL, 0x100 },
	{ "__itt_frame_end_v3", (void **)&frame_end, NULL, NULL, 0x100 },
	{ "__itt_string_handle_createA", &other, NULL, NULL, 0x100 },
	{ NULL, NULL, NULL, NULL, 0 },
};
static stax_itt_global global = {
	.magic = STAX_ITT_MAGIC,
	.version_major = 3,
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.api_list_ptr = api_list,
};

static stax_itt_domain dom = { .flags = 1, .nameA = "itttasks" };
static stax_itt_string_handle names[3] = { { .strA = "a" }, { .strA = "b" }, { .strA = "c" } };
static stax_itt_string_handle mark = { .strA = "m" };
static int iterations, depth;

static void *worker(void *arg)
{
	stax_itt_id none = { 0, 0, 0 };

	(void)arg;
	for (int i = 0; i < iterations; i++) {
		frame_begin(&dom, NULL);
		for (int d = 0; d < depth; d++)
			task_begin(&dom, none, none, &names[d % 3]);
		for (int d = 0; d < depth; d++)
			task_end(&dom);
		marker(&dom, none, &mark, 0);
		frame_end(&dom, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *lib = getenv("INTEL_LIBITTNOTIFY64");
	int n, filled = 0;
	pthread_t *th;
	void *h;
	api_init_fn init;

	if (argc != 5) {
		fprintf(stderr, "usage: itttasks THREADS ITERATIONS DEPTH join|exit\n");
		return 2;
	}
	n = atoi(argv[1]);
	iterations = atoi(argv[2]);
	depth = atoi(argv[3]);
	h = lib ? dlopen(lib, RTLD_NOW) : NULL;
	init = h ? (api_init_fn)dlsym(h, "__itt_api_init") : NULL;
	if (!init) {
		fprintf(stderr, "itttasks: no __itt_api_init in %s\n", lib ? lib : "(unset)");
		return 1;
	}
	init(&global, -1);
	filled = (task_begin != NULL) + (task_end != NULL) + (marker != NULL) + (frame_begin != NULL) + (frame_end != NULL) +
		 (other != NULL);
	printf("pid %d filled %d\n", getpid(), filled);
	fflush(stdout);
	if (!task_begin || !task_end || !marker || !frame_begin || !frame_end)
		return 0;
	th = calloc(n, sizeof *th);
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	if (strcmp(argv[4], "exit") == 0) {
		for (int i = 0; i < n; i++)
			pthread_detach(th[i]);
		worker(NULL);
		exit(0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	worker(NULL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("main: %.1f ns per task begin+end (markers included)\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / ((double)iterations * depth));
	return 0;
}

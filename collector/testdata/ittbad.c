/*
 * ittbad.c - drives the collector's ITT part with what programs get wrong:
 * ends without a begin (a task's, a frame's), a task still open when its
 * thread exits, one open on the exiting thread at process exit, one open
 * on a thread that is still running then, a name of 1 MB, a marker
 * without a name; and names a thread.  Prints "pid P worker W comm C".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../stax_itt.h"

typedef void (*task_begin_fn)(const stax_itt_domain *, stax_itt_id, stax_itt_id, stax_itt_string_handle *);
typedef void (*task_end_fn)(const stax_itt_domain *);
typedef void (*marker_fn)(const stax_itt_domain *, stax_itt_id, stax_itt_string_handle *, int);
typedef void (*frame_fn)(const stax_itt_domain *, stax_itt_id *);
typedef void (*set_name_fn)(const char *);
typedef void (*api_init_fn)(stax_itt_global *, int);

static task_begin_fn task_begin;
static task_end_fn task_end;
static marker_fn marker;
static frame_fn frame_begin, frame_end;
static set_name_fn set_name;

static stax_itt_api_info api_list[] = {
	{ "__itt_task_begin", (void **)&task_begin, NULL, NULL, 0x100 },
	{ "__itt_task_end", (void **)&task_end, NULL, NULL, 0x100 },
	{ "__itt_marker", (void **)&marker, NULL, NULL, 0x100 },
	{ "__itt_frame_begin_v3", (void **)&frame_begin, NULL, NULL, 0x100 },
	{ "__itt_frame_end_v3", (void **)&frame_end, NULL, NULL, 0x100 },
	{ "__itt_thread_set_name", (void **)&set_name, NULL, NULL, 0x100 },
	{ NULL, NULL, NULL, NULL, 0 },
};
static stax_itt_global global = {
	.magic = STAX_ITT_MAGIC,
	.version_major = 3,
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.api_list_ptr = api_list,
};

static stax_itt_domain dom = { .flags = 1, .nameA = "ittbad" };
static stax_itt_string_handle h_a = { .strA = "a" }, h_b = { .strA = "b" }, h_exit = { .strA = "open_at_exit" },
			      h_blocked = { .strA = "blocked" }, h_long, h_none;
static stax_itt_id none;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int blocked_ready;
static long worker_tid;
static char worker_comm[16];

static void *worker(void *arg)
{
	(void)arg;
	set_name("itt-worker-name-longer-than-15");
	prctl(PR_GET_NAME, worker_comm, 0, 0, 0);
	worker_tid = syscall(SYS_gettid);
	task_end(&dom); /* no begin */
	task_begin(&dom, none, none, &h_a);
	task_begin(&dom, none, none, &h_b);
	task_end(&dom);
	return NULL; /* a still open */
}

static void *blocker(void *arg)
{
	(void)arg;
	task_begin(&dom, none, none, &h_blocked);
	pthread_mutex_lock(&mu);
	blocked_ready = 1;
	pthread_cond_broadcast(&cv);
	for (;;)
		pthread_cond_wait(&cv, &mu);
	return NULL;
}

int main(void)
{
	const char *lib = getenv("INTEL_LIBITTNOTIFY64");
	void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
	api_init_fn init = h ? (api_init_fn)dlsym(h, "__itt_api_init") : NULL;
	pthread_t th;
	char *longname;

	if (!init) {
		fprintf(stderr, "ittbad: no __itt_api_init in %s\n", lib ? lib : "(unset)");
		return 1;
	}
	init(&global, -1);
	if (!task_begin || !task_end || !marker || !frame_begin || !frame_end || !set_name) {
		fprintf(stderr, "ittbad: the collector filled too few entries\n");
		return 1;
	}
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	pthread_create(&th, NULL, blocker, NULL);
	pthread_mutex_lock(&mu);
	while (!blocked_ready)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);

	frame_end(&dom, NULL); /* no begin */
	longname = malloc(1 << 20);
	memset(longname, 'x', (1 << 20) - 1);
	longname[(1 << 20) - 1] = 0;
	h_long.strA = longname;
	task_begin(&dom, none, none, &h_long);
	task_end(&dom);
	marker(&dom, none, &h_none, 0);
	task_begin(&dom, none, none, &h_exit);
	printf("pid %d worker %ld comm %s\n", getpid(), worker_tid, worker_comm);
	fflush(stdout);
	exit(0); /* open_at_exit open here, blocked open on the other thread */
}

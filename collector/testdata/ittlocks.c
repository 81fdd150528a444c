/*
 * ittlocks.c - counts the locks the collector takes and the writes it makes
 * while THREADS threads each run TASKS ITT tasks (begin and end through the
 * library named by INTEL_LIBITTNOTIFY64, as ittapi's static part calls it).
 *
 *   ittlocks THREADS TASKS
 *
 * It defines pthread_mutex_lock, write and writev (linked with -rdynamic),
 * so that the collector, which calls them through the PLT, gets these ones:
 * they count the calls made while the threads run, then do the real thing.
 * Prints "tasks N locks L writes W".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

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
static stax_itt_domain dom = { .flags = 1, .nameA = "ittlocks" };
static stax_itt_string_handle names[2] = { { .strA = "outer" }, { .strA = "inner" } };

static int counting;      /* atomic */
static unsigned long locks, writes; /* atomic */
static int (*real_lock)(pthread_mutex_t *);
static long tasks;

int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
		__atomic_add_fetch(&locks, 1, __ATOMIC_RELAXED);
	if (!real_lock)
		real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	return real_lock(m);
}

ssize_t write(int fd, const void *buf, size_t count)
{
	if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
		__atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED);
	return syscall(SYS_write, fd, buf, count);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
	if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
		__atomic_add_fetch(&writes, 1, __ATOMIC_RELAXED);
	return syscall(SYS_writev, fd, iov, n);
}

static void *worker(void *arg)
{
	stax_itt_id none = { 0, 0, 0 };

	(void)arg;
	for (long i = 0; i < tasks; i += 2) {
		task_begin(&dom, none, none, &names[0]);
		task_begin(&dom, none, none, &names[1]);
		task_end(&dom);
		task_end(&dom);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *lib = getenv("INTEL_LIBITTNOTIFY64");
	pthread_t th[64];
	int n;

	if (argc != 3 || (n = atoi(argv[1])) < 1 || n > 64) {
		fprintf(stderr, "usage: ittlocks THREADS(1-64) TASKS\n");
		return 2;
	}
	tasks = atol(argv[2]);
	if (lib && *lib) {
		void *h = dlopen(lib, RTLD_NOW);
		api_init_fn init = h ? (api_init_fn)dlsym(h, "__itt_api_init") : NULL;

		if (init)
			init(&global, -1);
	}
	if (!task_begin || !task_end) {
		fprintf(stderr, "ittlocks: the collector filled no task entries\n");
		return 1;
	}
	/* Each thread's first calls (its buffer, its key) are not counted. */
	task_begin(&dom, (stax_itt_id){ 0, 0, 0 }, (stax_itt_id){ 0, 0, 0 }, &names[0]);
	task_end(&dom);
	__atomic_store_n(&counting, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&counting, 0, __ATOMIC_RELAXED);
	printf("tasks %ld locks %lu writes %lu\n", (long)n * (tasks / 2 * 2), __atomic_load_n(&locks, __ATOMIC_RELAXED),
	       __atomic_load_n(&writes, __ATOMIC_RELAXED));
	return 0;
}

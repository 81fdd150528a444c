// Drives stax's ITT collector as ittapi's static part does: it defines the ITT global and
// its API list, loads the library named by INTEL_LIBITTNOTIFY64, calls its __itt_api_init
// and then calls through the pointers it filled. FRAMES frames run nested tasks: frame >
// physics (MS milliseconds of CPU) and render (2*MS), timed by the program itself. Before
// them it writes a marker file, marker-PID.txt in its current directory (samply's format),
// with a "setup" span around some work. Then it prints what it measured and "ready", waits
// for a line on stdin, prints go_ns and exits.
//
//   ittframes [FRAMES [MS]]
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "cpubudget.h"

// ittapi's layouts (ittnotify_config.h, ittnotify.h).
#pragma pack(push, 8)
typedef struct {
	const char *name;
	void **func_ptr;
	void *init_func;
	void *null_func;
	int group;
} api_info;
typedef struct {
	unsigned char magic[8];
	unsigned long version_major, version_minor, version_build;
	volatile long api_initialized, mutex_initialized, atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	api_info *api_list_ptr;
	void *next;
	void *thread_list, *domain_list, *string_list;
	int state;
	void *counter_list;
	unsigned int ipt_collect_events;
	void *histogram_list;
} itt_global;
typedef struct domain {
	volatile int flags;
	const char *nameA;
	void *nameW;
	int extra1;
	void *extra2;
	struct domain *next;
} itt_domain;
typedef struct string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct string_handle *next;
} itt_string_handle;
typedef struct {
	unsigned long long d1, d2, d3;
} itt_id;
#pragma pack(pop)

typedef void (*task_begin_fn)(const itt_domain *, itt_id, itt_id, itt_string_handle *);
typedef void (*task_end_fn)(const itt_domain *);
typedef void (*api_init_fn)(itt_global *, int);

static task_begin_fn task_begin;
static task_end_fn task_end;
static void (*thread_set_name)(const char *);
static void domain_create_init(void) {}
// The static part's own, pointing at its init function: the collector must leave it.
static void *domain_create = (void *)domain_create_init;

static api_info api_list[] = {
	{ "__itt_domain_createA", &domain_create, (void *)domain_create_init, (void *)domain_create_init, 1 },
	{ "__itt_task_begin", (void **)&task_begin, NULL, NULL, 1 << 8 },
	{ "__itt_task_end", (void **)&task_end, NULL, NULL, 1 << 8 },
	{ "__itt_thread_set_name", (void **)&thread_set_name, NULL, NULL, 1 << 2 },
	{ NULL, NULL, NULL, NULL, 0 },
};
static itt_global global = {
	.magic = { 0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30 },
	.version_major = 3, .version_minor = 0, .version_build = 20180723,
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.api_list_ptr = api_list,
};

static volatile unsigned long sink;

__attribute__((noinline)) static void physics_work(double ms) {
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i * 3;
}

__attribute__((noinline)) static void render_work(double ms) {
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink ^= i * 5;
}

__attribute__((noinline)) static void setup_work(double ms) {
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i * 7;
}

static unsigned long long now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int main(int argc, char **argv) {
	int frames = argc > 1 ? atoi(argv[1]) : 20;
	double ms = arg_ms(argc, argv, 2, 20);
	const char *lib = getenv("INTEL_LIBITTNOTIFY64");
	itt_domain dom = { .flags = 1, .nameA = "ittframes" };
	itt_string_handle h_frame = { .strA = "frame" }, h_physics = { .strA = "physics" }, h_render = { .strA = "render" };
	itt_id none = { 0, 0, 0 };
	unsigned long long total[3] = { 0 }, t0, t1, t2, t3;
	char path[64];

	// The marker file: kept open and mapped, as samply asks of programs.
	snprintf(path, sizeof path, "marker-%d.txt", getpid());
	int mfd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	if (mfd < 0 || ftruncate(mfd, 4096) != 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, mfd, 0) == MAP_FAILED) {
		perror("marker file");
		return 1;
	}
	ftruncate(mfd, 0);
	t0 = now_ns();
	setup_work(ms);
	t1 = now_ns();
	dprintf(mfd, "%llu %llu setup\n", t0, t1);
	dprintf(mfd, "%llu %llu setup_done\n", t1, t1);
	printf("marker setup %llu %llu\n", t0, t1);

	if (!lib || !*lib) {
		fprintf(stderr, "INTEL_LIBITTNOTIFY64 is not set\n");
		return 1;
	}
	void *h = dlopen(lib, RTLD_NOW);
	api_init_fn init = h ? (api_init_fn)dlsym(h, "__itt_api_init") : NULL;
	if (!init) {
		fprintf(stderr, "load %s: %s\n", lib, dlerror());
		return 1;
	}
	init(&global, -1);
	if (!task_begin || !task_end || !thread_set_name || domain_create != (void *)domain_create_init) {
		fprintf(stderr, "__itt_api_init filled task_begin %p, task_end %p, thread_set_name %p, changed domain_create: %d\n",
			(void *)task_begin, (void *)task_end, (void *)thread_set_name, domain_create != (void *)domain_create_init);
		return 1;
	}
	thread_set_name("frames-main");
	for (int f = 0; f < frames; f++) {
		t0 = now_ns();
		task_begin(&dom, none, none, &h_frame);
		t1 = now_ns();
		task_begin(&dom, none, none, &h_physics);
		physics_work(ms);
		task_end(&dom);
		t2 = now_ns();
		total[1] += t2 - t1;
		task_begin(&dom, none, none, &h_render);
		render_work(2 * ms);
		task_end(&dom);
		t3 = now_ns();
		total[2] += t3 - t2;
		task_end(&dom);
		total[0] += now_ns() - t0;
	}
	printf("measured frame %d %llu\n", frames, total[0]);
	printf("measured physics %d %llu\n", frames, total[1]);
	printf("measured render %d %llu\n", frames, total[2]);
	printf("ready_ns %llu\n", now_ns());
	printf("ready\n");
	fflush(stdout);
	char line[16];
	fgets(line, sizeof line, stdin);
	unsigned long long go = now_ns();
	printf("go_ns %llu\n", go);
	dprintf(mfd, "%llu %llu after_go\n", go, go);
	return 0;
}

/*
 * ittstress.c - stress, hostile-input and speed tests for stax's JIT
 * Profiling API collector.
 *
 * Usage:
 *   ittstress stress THREADS LOADS   THREADS threads each report LOADS
 *                                    methods, with inline ranges, unloads,
 *                                    invalid events and forks in between
 *   ittstress hostile                a fixed sequence of odd events
 *   ittstress bench CALLS            times CALLS loads of 1 KiB of code
 *                                    with 100 line entries each
 *
 * The last lines of output state what the collector should have written:
 *   expect loads=L unloads=U inlines=I
 *   pid=P
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ittstub.h"

static size_t pagesz;
static int vm_read_works;

static void *map_pages(size_t pages)
{
	void *p = mmap(NULL, pages * pagesz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

/* One readable page followed by an inaccessible one. */
static unsigned char *guarded_page(void)
{
	unsigned char *p = map_pages(2);

	if (mprotect(p + pagesz, pagesz, PROT_NONE) != 0) {
		perror("mprotect");
		exit(1);
	}
	return p;
}

/* Whether reading this process's memory through process_vm_readv works. */
static int check_vm_read(void)
{
	char src[16] = "probe", dst[16];
	struct iovec l = { dst, sizeof(dst) }, r = { src, sizeof(src) };

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof(src);
}

static int load(int type, uint32_t id, const char *name, const char *cls,
		const char *module, void *addr, uint32_t size,
		struct stax_jit_line *lines, uint32_t nlines, const char *src, int arch)
{
	switch (type) {
	case STAX_JIT_EV_METHOD_LOAD_FINISHED_V2: {
		struct stax_jit_method_load_v2 m;

		memset(&m, 0, sizeof(m));
		m.method_id = id;
		m.method_name = (char *)name;
		m.class_name = (char *)cls;
		m.module_name = (char *)module;
		m.load_address = addr;
		m.size = size;
		m.lines = lines;
		m.line_count = nlines;
		m.source_file = (char *)src;
		return stub_event(type, &m);
	}
	case STAX_JIT_EV_METHOD_LOAD_FINISHED_V3: {
		struct stax_jit_method_load_v3 m;

		memset(&m, 0, sizeof(m));
		m.method_id = id;
		m.method_name = (char *)name;
		m.class_name = (char *)cls;
		m.module_name = (char *)module;
		m.load_address = addr;
		m.size = size;
		m.lines = lines;
		m.line_count = nlines;
		m.source_file = (char *)src;
		m.arch = (enum stax_jit_arch)arch;
		return stub_event(type, &m);
	}
	default: {
		struct stax_jit_method_load m;

		memset(&m, 0, sizeof(m));
		m.method_id = id;
		m.method_name = (char *)name;
		m.class_name = (char *)cls;
		m.load_address = addr;
		m.size = size;
		m.lines = lines;
		m.line_count = nlines;
		m.source_file = (char *)src;
		return stub_event(type, &m);
	}
	}
}

static void unload(uint32_t id)
{
	struct stax_jit_method_id m = { id };

	stub_event(STAX_JIT_EV_METHOD_UNLOAD_START, &m);
}

static void inline_load(uint32_t id, uint32_t parent, const char *name, void *addr,
			uint32_t size, const char *src)
{
	struct stax_jit_inline_load m;

	memset(&m, 0, sizeof(m));
	m.method_id = id;
	m.parent_method_id = parent;
	m.method_name = (char *)name;
	m.load_address = addr;
	m.size = size;
	m.source_file = (char *)src;
	stub_event(STAX_JIT_EV_METHOD_INLINE_LOAD_FINISHED, &m);
}

/* Events that must produce no record at all. */
static void invalid_events(unsigned char *code)
{
	static const int types[] = { 13, 14, 15, 16, 17, 21, 22 };
	static const int unknown[] = { 0, 1, 3, 12, 18, 19, 20, 23, 99, -1, 0x7fffffff };
	unsigned char zeros[256];
	struct stax_jit_method_update up;
	size_t i;

	memset(zeros, 0, sizeof(zeros));
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		stub_event(types[i], NULL);
	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		stub_event(unknown[i], NULL);
		stub_event(unknown[i], zeros);
	}
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		stub_event(types[i], zeros);   /* id 0, NULL address, size 0 */
	load(13, 0, "id0", NULL, NULL, code, 16, NULL, 0, NULL, 0);
	load(21, 0, "id0", NULL, NULL, code, 16, NULL, 0, NULL, 0);
	load(22, 0, "id0", NULL, NULL, code, 16, NULL, 0, NULL, 0);
	load(13, 0x7ffffff0, "size0", NULL, NULL, code, 0, NULL, 0, NULL, 0);
	load(13, 0x7ffffff1, "addr0", NULL, NULL, NULL, 16, NULL, 0, NULL, 0);
	load(13, 0x7ffffff2, "wrap", NULL, NULL, (void *)(uintptr_t)0xfffffffffffff000ull,
	     0x2000, NULL, 0, NULL, 0);
	inline_load(0x7ffffff3, 0, "noparent", code, 4, NULL);
	inline_load(0, 1, "noid", code, 4, NULL);
	inline_load(0x7ffffff4, 1, "size0", code, 0, NULL);
	unload(0);
	unload(0x7ffffff5);
	memset(&up, 0, sizeof(up));
	up.load_address = (void *)(uintptr_t)16;
	up.size = 4;
	stub_event(STAX_JIT_EV_METHOD_UPDATE_V2, &up);
}

/* ---- stress ---- */

struct worker {
	int index;
	int loads_per_thread;
	unsigned char *code;    /* 64 bytes per load */
	int loads, unloads, inlines;
	pthread_t thread;
};

static int nworkers;

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned char *hp = guarded_page();
	struct stax_jit_line lines[4] = { { 0, 1 }, { 4, 2 }, { 16, 3 }, { 40, 4 } };
	char name[64];
	uint32_t hid = 0x40000000u + (uint32_t)w->index * 100;
	int i;

	/* odd but valid loads, each in its own 64 bytes of a private page */
	memset(hp, 0x90, pagesz);
	load(13, hid + 1, NULL, NULL, NULL, hp, 64, lines, 4, "odd.js", 0);
	load(21, hid + 2, "\xff\xfe\x80odd\xc3", NULL, NULL, hp + 64, 64, NULL, 0, NULL, 0);
	load(13, hid + 3, "nolines", NULL, NULL, hp + 128, 64, NULL, 5, NULL, 0);
	load(15, hid + 4, "update_unknown", NULL, NULL, hp + 192, 64, NULL, 0, NULL, 0);
	load(22, hid + 5, "m", "C", "mod", hp + 256, 64, lines, 4, NULL, 1);
	w->loads += 5;
	invalid_events(hp);

	for (i = 0; i < w->loads_per_thread; i++) {
		int idx = w->index * w->loads_per_thread + i;
		uint32_t id = (uint32_t)idx + 1;
		unsigned char *addr = w->code + (size_t)idx * 64;
		static const int kinds[] = { 13, 21, 22 };

		snprintf(name, sizeof(name), "s_%d_%d", w->index, i);
		load(kinds[i % 3], id, name, i % 7 == 0 ? "Stress" : NULL, NULL, addr, 64,
		     lines, 4, "stress.js", 0);
		w->loads++;
		if (i % 10 == 0) {
			inline_load(0x20000000u + (uint32_t)idx, id, "inl", addr + 8, 16, "stress.js");
			w->inlines++;
		}
		if (i % 10 == 5) {
			unload(id);
			w->unloads++;
		}
		if (i % 1000 == 999)
			invalid_events(hp);
		if (w->index == 0 && (i + 1) % (w->loads_per_thread / 4 + 1) == 0) {
			pid_t pid = fork();

			if (pid < 0) {
				perror("fork");
				exit(1);
			}
			if (pid == 0) {
				load(13, 0x30000000u + (uint32_t)i, "forkchild", NULL, NULL,
				     hp + 512, 64, NULL, 0, NULL, 0);
				/*
				 * exit, not _exit: the collector's writer thread
				 * writes what is pending at exit; _exit would lose
				 * the records it has not written yet.
				 */
				exit(0);
			}
			int status;
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0) {
				fprintf(stderr, "fork child failed\n");
				exit(1);
			}
			printf("fork pid=%d\n", (int)pid);
		}
	}
	return NULL;
}

static int stress(int threads, int per)
{
	struct worker *ws = calloc((size_t)threads, sizeof(*ws));
	size_t bytes = (size_t)threads * (size_t)per * 64;
	unsigned char *code = map_pages((bytes + pagesz - 1) / pagesz + 1);
	int loads = 0, unloads = 0, inlines = 0, i;

	for (i = 0; (size_t)i < bytes; i++)
		code[i] = (unsigned char)(i * 31 + 7);
	nworkers = threads;
	for (i = 0; i < threads; i++) {
		ws[i].index = i;
		ws[i].loads_per_thread = per;
		ws[i].code = code;
		if (pthread_create(&ws[i].thread, NULL, work, &ws[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(ws[i].thread, NULL);
		loads += ws[i].loads;
		unloads += ws[i].unloads;
		inlines += ws[i].inlines;
	}

	/* sizes far beyond the memory behind them, once nothing else follows */
	if (vm_read_works) {
		unsigned char *g = guarded_page();
		struct stax_jit_line *tail = (struct stax_jit_line *)(g + pagesz) - 2;

		memset(g, 0xc3, pagesz);
		tail[0] = (struct stax_jit_line){ 0, 1 };
		tail[1] = (struct stax_jit_line){ 8, 2 };
		load(13, 0x50000001u, "huge_lines", NULL, NULL, g, 64, tail, 0xffffffffu, "h.js", 0);
		load(13, 0x50000002u, "huge_code", NULL, NULL, g + 128, 0xffffffffu, NULL, 0, NULL, 0);
		loads += 2;
	}
	stub_event(STAX_JIT_EV_SHUTDOWN, NULL);
	printf("expect loads=%d unloads=%d inlines=%d\n", loads, unloads, inlines);
	printf("pid=%d\n", (int)getpid());
	free(ws);
	return 0;
}

/* ---- hostile ---- */

static int hostile(void)
{
	unsigned char *p = guarded_page();
	unsigned char *g = guarded_page();
	struct stax_jit_line lines[2] = { { 0, 7 }, { 8, 8 } };
	static char longname[100 << 10];
	struct stax_jit_method_update up;
	size_t i;

	for (i = 0; i < pagesz; i++)
		p[i] = (unsigned char)i;
	memset(longname, 'x', sizeof(longname) - 1);

	invalid_events(p);
	load(13, 1001, NULL, NULL, NULL, p, 16, lines, 2, "h.js", 0);
	load(21, 1002, "\xff\xfe\x80" "bad\xc3", NULL, NULL, p + 16, 16, NULL, 0, NULL, 0);
	load(22, 1003, "run", "Cls", "mod", p + 32, 16, NULL, 0, NULL, 1);
	load(21, 1004, "pkg.Cls.go", "pkg.Cls", NULL, p + 48, 16, NULL, 0, NULL, 0);
	load(13, 1005, "m", "K", NULL, p + 64, 16, NULL, 0, NULL, 0);
	load(13, 1006, longname, NULL, NULL, p + 80, 16, NULL, 0, NULL, 0);
	load(13, 1007, "lines_null", NULL, NULL, p + 96, 16, NULL, 5, NULL, 0);
	if (vm_read_works) {
		struct stax_jit_line *tail = (struct stax_jit_line *)(g + pagesz) - 2;

		memset(g, 0xc3, pagesz);
		tail[0] = (struct stax_jit_line){ 0, 1 };
		tail[1] = (struct stax_jit_line){ 8, 2 };
		load(13, 1008, "huge_lines", NULL, NULL, p + 112, 16, tail, 0xffffffffu, "h.js", 0);
	}
	load(15, 1010, "update_new", NULL, NULL, p + 128, 16, NULL, 0, NULL, 0);
	/* new bytes for 1005, announced with METHOD_UPDATE */
	memset(p + 64, 0xab, 16);
	load(15, 1005, NULL, NULL, NULL, p + 64, 16, NULL, 0, NULL, 0);
	/* METHOD_UPDATE_V2 inside 1007 */
	memset(p + 100, 0xcd, 4);
	memset(&up, 0, sizeof(up));
	up.load_address = p + 100;
	up.size = 4;
	up.type = STAX_JIT_SEG_CODE;
	up.data_format = "%s";
	stub_event(STAX_JIT_EV_METHOD_UPDATE_V2, &up);
	inline_load(2001, 1005, NULL, p + 68, 4, NULL);
	unload(1001);
	/* a method in two regions, unloaded */
	load(13, 1012, "split", NULL, NULL, p + 160, 16, NULL, 0, NULL, 0);
	load(13, 1012, NULL, NULL, NULL, p + 192, 16, NULL, 0, NULL, 0);
	/* METHOD_UPDATE of part of 1004, with a line table */
	struct stax_jit_line ul[1] = { { 0, 9 } };
	load(15, 1004, NULL, NULL, NULL, p + 52, 4, ul, 1, "h2.js", 0);
	unload(1012);
	/* 1014 replaces 1013 without an unload; the late unload of 1013 is moot */
	load(13, 1013, "old", NULL, NULL, p + 224, 16, NULL, 0, NULL, 0);
	load(13, 1014, "new", NULL, NULL, p + 224, 16, NULL, 0, NULL, 0);
	unload(1013);
	unload(1014);
	/* last: a 16 MiB region may cover the regions above */
	if (vm_read_works)
		load(13, 1009, "huge_code", NULL, NULL, g, 0xffffffffu, NULL, 0, NULL, 0);
	stub_event(STAX_JIT_EV_SHUTDOWN, NULL);
	/* after SHUTDOWN nothing more is written */
	load(13, 1011, "after", NULL, NULL, p + 144, 16, NULL, 0, NULL, 0);
	unload(1002);
	printf("addrs base=%p guard=%p\n", (void *)p, (void *)g);
	printf("pid=%d\n", (int)getpid());
	return 0;
}

/* ---- bench ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench(int calls)
{
	size_t bytes = ((size_t)calls + 1) * 1024;
	unsigned char *code = map_pages(bytes / pagesz + 1);
	struct stax_jit_line lines[100];
	uint64_t *t = calloc((size_t)calls, sizeof(*t)), total = 0;
	char name[64];
	int i;

	for (i = 0; (size_t)i < bytes; i++)
		code[i] = (unsigned char)(i * 13 + 1);
	for (i = 0; i < 100; i++)
		lines[i] = (struct stax_jit_line){ (uint32_t)i * 10, (uint32_t)i + 1 };
	/* the first event creates the file; keep it out of the timing */
	load(13, 1, "warmup", NULL, NULL, code, 1024, lines, 100, "bench.js", 0);
	for (i = 0; i < calls; i++) {
		uint64_t t0;

		snprintf(name, sizeof(name), "Bench.method_%d", i);
		t0 = now_ns();
		load(13, (uint32_t)i + 2, name, NULL, NULL, code + ((size_t)i + 1) * 1024, 1024,
		     lines, 100, "bench.js", 0);
		t[i] = now_ns() - t0;
		total += t[i];
	}
	stub_event(STAX_JIT_EV_SHUTDOWN, NULL);
	qsort(t, (size_t)calls, sizeof(*t), cmp_u64);
	printf("bench calls=%d mean_ns=%.0f p50_ns=%llu p99_ns=%llu max_ns=%llu\n", calls,
	       calls ? (double)total / calls : 0.0,
	       calls ? (unsigned long long)t[calls / 2] : 0ull,
	       calls ? (unsigned long long)t[(size_t)calls * 99 / 100] : 0ull,
	       calls ? (unsigned long long)t[calls - 1] : 0ull);
	printf("expect loads=%d unloads=0 inlines=0\n", calls + 1);
	printf("pid=%d\n", (int)getpid());
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	pagesz = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	vm_read_works = check_vm_read();
	printf("initialize %u vmread=%d\n", stub_load(), vm_read_works);
	if (argc >= 4 && strcmp(argv[1], "stress") == 0)
		return stress(atoi(argv[2]), atoi(argv[3]));
	if (argc >= 2 && strcmp(argv[1], "hostile") == 0)
		return hostile();
	if (argc >= 3 && strcmp(argv[1], "bench") == 0)
		return bench(atoi(argv[2]));
	fprintf(stderr, "usage: %s stress THREADS LOADS | hostile | bench CALLS\n", argv[0]);
	return 2;
}

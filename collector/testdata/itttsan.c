/*
 * itttsan.c - many threads calling the JIT Profiling API while the process
 * shuts down, for running stax's collector under ThreadSanitizer.
 *
 * Usage: itttsan shutdown|exit THREADS EVENTS
 *
 * THREADS threads each send loads (with line tables), inline ranges,
 * unloads, updates and invalid events in a loop.  Once every thread has
 * sent EVENTS events, the main thread
 *   shutdown: sends SHUTDOWN, waits until every thread has sent EVENTS
 *             more (which the collector ignores), stops and joins them;
 *   exit:     calls exit() while the threads go on sending, so that the
 *             collector's destructor runs among their calls.
 * Synchronisation is on event counts only.  The last line is pid=P.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ittstub.h"

#define REGION 64
#define SLOTS 64

struct worker {
	int index;
	unsigned char *code;    /* SLOTS regions of REGION bytes */
	unsigned long sent;     /* atomic */
	pthread_t thread;
};

static int stop;                /* atomic */

static void send_load(int type, uint32_t id, const char *name, void *addr,
		      struct stax_jit_line *lines, uint32_t nlines)
{
	switch (type) {
	case STAX_JIT_EV_METHOD_LOAD_FINISHED_V3: {
		struct stax_jit_method_load_v3 m;

		memset(&m, 0, sizeof(m));
		m.method_id = id;
		m.method_name = (char *)name;
		m.load_address = addr;
		m.size = REGION;
		m.line_count = nlines;
		m.lines = lines;
		m.source_file = "tsan.js";
		m.module_name = "mod";
		stub_event(type, &m);
		break;
	}
	default: {
		struct stax_jit_method_load m;

		memset(&m, 0, sizeof(m));
		m.method_id = id;
		m.method_name = (char *)name;
		m.load_address = addr;
		m.size = REGION;
		m.line_count = nlines;
		m.lines = lines;
		m.class_name = "Tsan";
		m.source_file = "tsan.js";
		stub_event(type, &m);
	}
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct stax_jit_line lines[3] = { { 0, 1 }, { 8, 2 }, { 32, 3 } };
	char name[64];
	unsigned long i;

	for (i = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); i++) {
		unsigned slot = (unsigned)(i % SLOTS);
		uint32_t id = (uint32_t)w->index * 1000000u + (uint32_t)(i % 100000) + 1;
		unsigned char *addr = w->code + (size_t)slot * REGION;

		snprintf(name, sizeof(name), "t%d_%lu", w->index, i);
		send_load(i % 3 == 0 ? STAX_JIT_EV_METHOD_LOAD_FINISHED_V3 :
			  i % 3 == 1 ? STAX_JIT_EV_METHOD_LOAD_FINISHED : STAX_JIT_EV_METHOD_UPDATE,
			  id, name, addr, lines, 3);
		if (i % 4 == 0) {
			struct stax_jit_inline_load m;

			memset(&m, 0, sizeof(m));
			m.method_id = id + 500000u;
			m.parent_method_id = id;
			m.method_name = "inl";
			m.load_address = addr + 8;
			m.size = 16;
			m.source_file = "tsan.js";
			stub_event(STAX_JIT_EV_METHOD_INLINE_LOAD_FINISHED, &m);
		}
		if (i % 5 == 0) {
			struct stax_jit_method_update up = { addr, REGION, STAX_JIT_SEG_CODE, NULL };

			stub_event(STAX_JIT_EV_METHOD_UPDATE_V2, &up);
		}
		if (i % 3 == 2) {
			struct stax_jit_method_id m = { id };

			stub_event(STAX_JIT_EV_METHOD_UNLOAD_START, &m);
		}
		stub_event(99, NULL);
		__atomic_add_fetch(&w->sent, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Waits until every worker has sent at least n events. */
static void wait_sent(struct worker *ws, int threads, unsigned long n)
{
	int i;

	for (i = 0; i < threads; i++)
		while (__atomic_load_n(&ws[i].sent, __ATOMIC_ACQUIRE) < n)
			sched_yield();
}

int main(int argc, char **argv)
{
	struct worker *ws;
	unsigned char *code;
	int threads, exit_mode, i;
	unsigned long events;
	size_t pagesz = (size_t)sysconf(_SC_PAGESIZE);

	if (argc != 4 || (strcmp(argv[1], "shutdown") != 0 && strcmp(argv[1], "exit") != 0)) {
		fprintf(stderr, "usage: %s shutdown|exit THREADS EVENTS\n", argv[0]);
		return 2;
	}
	exit_mode = strcmp(argv[1], "exit") == 0;
	threads = atoi(argv[2]);
	events = strtoul(argv[3], NULL, 10);
	if (threads < 1 || events < 1) {
		fprintf(stderr, "THREADS and EVENTS must be positive\n");
		return 2;
	}
	stub_load();
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	ws = calloc((size_t)threads, sizeof(*ws));
	code = mmap(NULL, ((size_t)threads * SLOTS * REGION + pagesz - 1) / pagesz * pagesz,
		    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!ws || code == MAP_FAILED) {
		perror("itttsan");
		return 1;
	}
	memset(code, 0x90, (size_t)threads * SLOTS * REGION);
	for (i = 0; i < threads; i++) {
		ws[i].index = i;
		ws[i].code = code + (size_t)i * SLOTS * REGION;
		if (pthread_create(&ws[i].thread, NULL, work, &ws[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	wait_sent(ws, threads, events);
	if (exit_mode)
		exit(0);        /* the workers are still sending */
	stub_event(STAX_JIT_EV_SHUTDOWN, NULL);
	wait_sent(ws, threads, 2 * events);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < threads; i++)
		pthread_join(ws[i].thread, NULL);
	free(ws);
	return 0;
}

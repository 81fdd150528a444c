/*
 * ittstub.h - the JIT side of the JIT Profiling API for stax's test
 * programs: like the static stub JITs link, it loads the collector named by
 * INTEL_JIT_PROFILER64, resolves Initialize and NotifyEvent and calls
 * Initialize once.  Unlike the usual stub it forwards every event as is
 * (no method_id checks), so tests can send hostile events.
 */
#ifndef STAX_ITTSTUB_H
#define STAX_ITTSTUB_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "../stax_jitprofiling.h"

typedef unsigned int (*stub_initialize_fn)(void);
typedef int (*stub_notify_fn)(unsigned int, void *);

static stub_notify_fn stub_notify;
static unsigned int stub_mode;

/* Loads the collector; returns what Initialize returned (0 if none). */
static unsigned int stub_load(void)
{
	const char *lib = getenv("INTEL_JIT_PROFILER64");
	stub_initialize_fn init;
	void *h;

	if (!lib || !*lib)
		return 0;
	h = dlopen(lib, RTLD_LAZY);
	if (!h) {
		fprintf(stderr, "stub: dlopen %s: %s\n", lib, dlerror());
		return 0;
	}
	stub_notify = (stub_notify_fn)dlsym(h, "NotifyEvent");
	init = (stub_initialize_fn)dlsym(h, "Initialize");
	if (!stub_notify || !init) {
		stub_notify = NULL;
		return 0;
	}
	stub_mode = init();
	return stub_mode;
}

static int stub_event(int type, void *data)
{
	return stub_notify ? stub_notify((unsigned int)type, data) : 0;
}

#endif

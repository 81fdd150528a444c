/*
 * stax_itt.h - what stax's collector needs of the ITT API's layouts (ittapi's
 * ittnotify_config.h and ittnotify.h, packed to 8 as there), and the format
 * of the spans file it writes.
 *
 * A program instrumented with ittnotify.h links ittapi's static part, which
 * loads the library named by INTEL_LIBITTNOTIFY64 and calls its
 * __itt_api_init(&global, groups): the library fills the function pointers
 * of the API list it implements.  Domains and string handles are made by
 * the static part itself; the collector reads their names.
 */
#ifndef STAX_ITT_H
#define STAX_ITT_H

#include <pthread.h>
#include <stdint.h>

#pragma pack(push, 8)

typedef struct stax_itt_api_info {
	const char *name;  /* "__itt_task_begin", ...; NULL ends the list */
	void **func_ptr;   /* where the static part calls through */
	void *init_func;
	void *null_func;
	int group;         /* __itt_group_id */
} stax_itt_api_info;

typedef struct stax_itt_global {
	unsigned char magic[8]; /* STAX_ITT_MAGIC */
	unsigned long version_major; /* 3 */
	unsigned long version_minor; /* 0 */
	unsigned long version_build;
	volatile long api_initialized;
	volatile long mutex_initialized;
	volatile long atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	stax_itt_api_info *api_list_ptr;
	struct stax_itt_global *next;
	/* more fields follow that the collector does not read */
} stax_itt_global;

typedef struct stax_itt_domain {
	volatile int flags; /* 0: disabled, the static part makes no calls */
	const char *nameA;
	void *nameW;
	int extra1;
	void *extra2;
	struct stax_itt_domain *next;
} stax_itt_domain;

typedef struct stax_itt_string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct stax_itt_string_handle *next;
} stax_itt_string_handle;

typedef struct stax_itt_id {
	unsigned long long d1, d2, d3;
} stax_itt_id;

#pragma pack(pop)

#define STAX_ITT_MAGIC { 0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30 }

/*
 * The spans file, <dir>/itt-<pid>.spans: a 40-byte header, then records,
 * little-endian (the machine's order; stax reads x86-64 and arm64 files).
 * Each thread buffers its records and appends them with one write; a write
 * that fails or falls short is rolled back (the file is cut back to its
 * last whole record) and its tasks and markers are counted as dropped.
 *
 *   header:  char magic[8] = "STAXITT\2", u32 pid, u32 header size (40),
 *            u64 start: the process's start time (field 22 of
 *            /proc/<pid>/stat, clock ticks since boot; 0 if unknown),
 *            u64 dropped: every task and marker of the process not written
 *            (DROP records included), updated in place,
 *            u32 failed writes, u32 errno of the last one, updated in place
 *   version 1 (stax's Go package): magic "STAXITT\1", u32 pid,
 *            u32 reserved (0): a 16-byte header without the counts
 *   record:  u16 type, u16 size (whole record, a multiple of 8), u32 tid,
 *            then by type:
 *     1 NAME:  u64 key, name bytes (NUL-padded to a multiple of 8)
 *              the name of key (a string handle) for the records of this
 *              thread that follow
 *     2 TASK:  u64 key, u64 start, u64 end (CLOCK_MONOTONIC ns), u32 depth,
 *              u32 flags: a task that ended (depth 0: outermost); flags 1:
 *              it was still open when its thread or the process ended, and
 *              ends there
 *     3 MARK:  u64 key, u64 time: a marker
 *     4 DROP:  u64 count: tasks and markers of this thread not written
 *              (its nesting was too deep, the file reached its bound, or
 *              a write failed), since the thread's last DROP
 *     5 NOTE:  u64 unmatched, u64 unfinished: task ends without a begin, and
 *              tasks still open at process exit on another thread than the
 *              exiting one (not written), since the thread's last NOTE
 */
#define STAX_ITT_FILE_MAGIC "STAXITT\2"
#define STAX_ITT_HEADER 40
#define STAX_ITT_HDR_PID 8     /* offset of the pid */
#define STAX_ITT_HDR_SIZE 12    /* offset of the header size */
#define STAX_ITT_HDR_START 16   /* offset of the process's start time */
#define STAX_ITT_HDR_DROPPED 24 /* offset of the dropped count */
#define STAX_ITT_HDR_FAILED 32  /* offset of the failed writes */
#define STAX_ITT_HDR_ERRNO 36   /* offset of the errno of the last */
enum {
	STAX_ITT_NAME = 1,
	STAX_ITT_TASK = 2,
	STAX_ITT_MARK = 3,
	STAX_ITT_DROP = 4,
	STAX_ITT_NOTE = 5,
};
#define STAX_ITT_TASK_UNFINISHED 1u
#define STAX_ITT_MAX_NAME 1024 /* bytes of a name written; longer names are cut */
#define STAX_ITT_MAX_DEPTH 64  /* open tasks per thread kept; deeper ones are dropped */

#endif

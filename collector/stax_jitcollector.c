/*
 * stax_jitcollector.c - JIT Profiling API collector for stax.
 *
 * A JIT that supports the JIT Profiling API loads the library named by
 * INTEL_JIT_PROFILER64 (INTEL_JIT_PROFILER32 for 32-bit processes), calls
 * Initialize() once and then NotifyEvent() for every piece of code it
 * generates.  This library turns those events into a perf jitdump file,
 * <dir>/jit-<pid>.dump (dir: STAX_JIT_DIR, default /tmp), plus the stax
 * extension records 100 (method id of a region), 101 (inline range) and
 * 102 (region unload) described in docs/jitdump-extensions.md.
 *
 * The collector does nothing unless STAX_JIT_COLLECT=1 is in the
 * environment: Initialize() then reports "nothing running", NotifyEvent()
 * ignores every event and no file is created.
 *
 * Function names written to CODE_LOAD records:
 *   [module "!"] [class "::"] method [" [32-bit]"]
 *   - method:  the event's method_name; when NULL or empty, "method_<id>"
 *              (decimal method id).  All regions of one method id use the
 *              first name reported for that id.
 *   - class:   class_file_name when set and non-empty, unless method_name
 *              already starts with it followed by '.', ':', '/', '$' or '#'.
 *   - module:  module_name of V2/V3 loads when set and non-empty.
 *   - " [32-bit]" for V3 loads whose architecture is 32-bit code.
 *   Inline records (101) use [class "::"] method.  Names are copied as
 *   bytes (not necessarily UTF-8), each part cut at 64 KiB.
 *
 * NotifyEvent does not write the file: under a process-wide mutex it
 * updates the collector's tables and appends the event's records (a load:
 * DEBUG_INFO when it has a line table, CODE_LOAD, record 100) to a pending
 * batch, and a writer thread, started at the process's first event, writes
 * whole batches.  The batch is bounded by STAX_JIT_BUFFER_KB (default 4096);
 * when it is full callers wait, nothing is dropped.  SHUTDOWN and the
 * library destructor (exit, dlclose) write everything pending; _exit, exec
 * and crashes lose what the writer has not written yet (it writes within
 * about a millisecond).  Code bytes are copied at event time, at
 * most 16 MiB per region (larger regions are cut to 16 MiB); line tables
 * are cut at 1M entries.  Code bytes and line tables are read through
 * process_vm_readv on the process itself, so a size larger than the
 * mapping it points into yields zero bytes for the unreadable part
 * instead of a crash (where the system refuses process_vm_readv, they are
 * copied directly).
 *
 * After fork() the child writes its own jit-<childpid>.dump, created at its
 * first event; that file starts with the regions inherited from the parent
 * (CODE_LOAD + record 100, without line tables or inline records).  The
 * parent's pending batch stays the parent's; the child starts its own
 * writer thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <search.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "stax_abi.h"
#include "stax_jitdump.h"
#include "stax_jitprofiling.h"

#define STAX_EXPORT __attribute__((visibility("default")))

#define CODE_CAP ((size_t)16 << 20)     /* bytes of code copied per region */
#define LINES_CAP ((size_t)1 << 20)     /* line table entries per region */
#define STR_CAP ((size_t)64 << 10)      /* bytes per name part */
#define DEBUG_REC_CAP ((size_t)64 << 20) /* bytes of one DEBUG_INFO record */
#define BUF_KEEP ((size_t)1 << 20)      /* larger scratch is freed after use */
#define LIMIT_DEFAULT_KB 4096u          /* STAX_JIT_BUFFER_KB when unset */
#define LIMIT_MIN_KB 16u
#define LIMIT_MAX_KB (1u << 20)
#define BUF_SLACK ((size_t)256 << 10)   /* room past the limit for the last event */
#define WRITER_STACK ((size_t)128 << 10)
#define WAKE_BYTES ((size_t)64 << 10)   /* a batch this large wakes the writer */
#define GATHER_NS 1000000u              /* else it gathers records this long */

/* record sizes, from the layouts of stax_jitdump.h */
#define PREFIX_SIZE sizeof(struct stax_jitdump_record_prefix)
#define LOAD_FIXED (PREFIX_SIZE + sizeof(struct stax_jitdump_code_load))
#define METHOD_ID_SIZE (PREFIX_SIZE + sizeof(struct stax_jitdump_stax_method_id))
#define UNLOAD_SIZE (PREFIX_SIZE + sizeof(struct stax_jitdump_stax_code_unload))
#define INLINE_FIXED (PREFIX_SIZE + sizeof(struct stax_jitdump_stax_inline))
#define DEBUG_FIXED (PREFIX_SIZE + sizeof(struct stax_jitdump_debug_info))
#define DEBUG_ENTRY_FIXED sizeof(struct stax_jitdump_debug_entry)

struct method;

/* A live code region.  Live regions never overlap. */
struct region {
	uint64_t start;
	uint64_t size;
	struct method *m;
};

/* What is known about one method id. */
struct method {
	uint32_t id;
	char *name;             /* first name reported, NULL if none yet */
	char *source;           /* first source file reported, or NULL */
	struct region **regions;
	uint32_t nregions;
	uint32_t cap;
	struct method *next;    /* hash chain */
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* both set up by cv_init */
static pthread_cond_t data_cv;  /* records pending, or stop */
static pthread_cond_t space_cv; /* batch taken, or writer gone */

/*
 * Flags read by threads that do not hold mu are accessed only through the
 * __atomic builtins, as are vm_read_state and fork_gen below.
 */
static struct {
	int enabled;            /* STAX_JIT_COLLECT=1; set once by init, atomic */
	char *dir;
	size_t limit;           /* STAX_JIT_BUFFER_KB: callers wait while this much is pending */
	int stats;              /* STAX_JIT_STATS=1: one line of counters on stderr */

	/* all below under mu */
	pid_t pid;              /* process the state below belongs to */
	int fd;                 /* open dump file, or -1 */
	int failed;             /* file could not be created/written for pid */
	uint64_t good;          /* bytes of the file that are whole records (the header's included) */
	/* After a failed write: the given-up file, kept open to count in its header what
	 * is not written (struct stax_jitdump_lost, rewritten in place), or -1. */
	int lost_fd;
	uint64_t lost;          /* CODE_LOAD records not written */
	uint32_t failed_writes, last_err;
	int shut;               /* SHUTDOWN seen; written under mu, atomic */
	int inherited;          /* regions came from a parent process */
	void *marker;
	size_t marker_len;
	uint64_t code_index;

	struct method **buckets;
	size_t nbuckets;
	size_t nmethods;
	void *tree;             /* tsearch tree of struct region * */

	unsigned char *buf;     /* pending batch: records not yet handed to the writer */
	size_t len, cap;
	size_t ev_start;        /* len when the current event began */
	int oom;                /* the current event ran out of memory */
	unsigned char *scratch; /* line table copy */
	size_t scratch_cap;

	/* the writer thread of this process */
	unsigned char *wbuf;    /* its batch (being written while writing is set) */
	size_t wcap;
	int writer;             /* running: it writes the pending batch */
	int writer_stop;        /* asked to write everything pending and exit */
	int writer_off;         /* do not start one (again): callers write themselves */
	int writing;            /* it is writing wbuf outside mu */
	int wake;               /* an event made the batch non-empty: signal data_cv */
	pthread_t writer_thread;

	/* counters for STAX_JIT_STATS */
	uint64_t n_events, n_writes, n_bytes, n_waits, wait_ns;
	size_t max_pending;
	int stats_done;
} st = { .fd = -1, .lost_fd = -1 };

static int vm_read_state;       /* 0 untested, 1 works, -1 unavailable; atomic */
static unsigned fork_gen;       /* counts forks into this process; atomic */
static __thread uint32_t tls_tid;       /* this thread's id, valid when ... */
static __thread unsigned tls_tid_gen;   /* ... this is fork_gen + 1 */

/* ---- encoding and buffers ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Writes one of the layouts of stax_jitdump.h at p (which need not be aligned). */
#define PUT(p, layout, ...)                                                     \
	(memcpy((p), &(layout){ __VA_ARGS__ }, sizeof(layout)), (p) + sizeof(layout))

static unsigned char *putstr(unsigned char *p, const char *s, size_t n)
{
	if (n)
		memcpy(p, s, n);
	p[n] = 0;
	return p + n + 1;
}

static unsigned char *put_prefix(unsigned char *p, uint32_t id, size_t size, uint64_t ts)
{
	return PUT(p, struct stax_jitdump_record_prefix,
		   .id = id, .total_size = (uint32_t)size, .timestamp = ts);
}

static size_t slen(const char *s)
{
	return s ? strnlen(s, STR_CAP) : 0;
}

/*
 * Copies n bytes at address src of this process into dst without faulting
 * on unmapped memory.  Returns the number of bytes copied.
 */
static size_t safe_copy(pid_t pid, void *dst, uint64_t src, size_t n)
{
	int state = __atomic_load_n(&vm_read_state, __ATOMIC_RELAXED);

	if (n == 0)
		return 0;
	if (state >= 0) {
		struct iovec local = { dst, n };
		struct iovec remote = { (void *)(uintptr_t)src, n };
		ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

		if (got >= 0) {
			if (state == 0)
				__atomic_store_n(&vm_read_state, 1, __ATOMIC_RELAXED);
			return (size_t)got;
		}
		if (errno == EFAULT)
			return 0;
		if (state == 1 || (errno != ENOSYS && errno != EPERM))
			return 0;
		__atomic_store_n(&vm_read_state, -1, __ATOMIC_RELAXED);
	}
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return n;
}

/* The calling thread's id, asking the kernel once per thread and fork. */
static uint32_t tid_now(void)
{
	unsigned gen = __atomic_load_n(&fork_gen, __ATOMIC_RELAXED) + 1;

	if (tls_tid_gen != gen) {
		tls_tid = (uint32_t)syscall(SYS_gettid);
		tls_tid_gen = gen;
	}
	return tls_tid;
}

/* Reserves n more bytes at the end of the record buffer. */
static unsigned char *reserve(size_t n)
{
	if (st.oom)
		return NULL;
	if (n > st.cap - st.len) {
		size_t want = st.cap ? st.cap : 16384;
		unsigned char *nb;

		while (want - st.len < n) {
			if (want > SIZE_MAX / 2) {
				st.oom = 1;
				return NULL;
			}
			want *= 2;
		}
		nb = realloc(st.buf, want);
		if (!nb) {
			st.oom = 1;
			return NULL;
		}
		st.buf = nb;
		st.cap = want;
	}
	st.len += n;
	return st.buf + st.len - n;
}

/*
 * write_all writes n bytes, completing short writes; 0 with errno set when it
 * cannot, *done then saying how many were written.
 */
static int write_all(int fd, const unsigned char *p, size_t n, size_t *done)
{
	*done = 0;
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		if (w == 0) {
			errno = ENOSPC;
			return 0;
		}
		p += w;
		n -= (size_t)w;
		*done += (size_t)w;
	}
	return 1;
}

/* whole_records is how many of the first w bytes of the records at p are whole records. */
static size_t whole_records(const unsigned char *p, size_t n, size_t w)
{
	size_t off = 0;

	while (off + PREFIX_SIZE <= n) {
		struct stax_jitdump_record_prefix pre;

		memcpy(&pre, p + off, sizeof pre);
		if (pre.total_size < PREFIX_SIZE || off + pre.total_size > w)
			break;
		off += pre.total_size;
	}
	return off;
}

/* count_loads counts the CODE_LOAD records of the n bytes of records at p. */
static uint64_t count_loads(const unsigned char *p, size_t n)
{
	uint64_t c = 0;
	size_t off = 0;

	while (off + PREFIX_SIZE <= n) {
		struct stax_jitdump_record_prefix pre;

		memcpy(&pre, p + off, sizeof pre);
		if (pre.id == STAX_JITDUMP_CODE_LOAD)
			c++;
		if (pre.total_size < PREFIX_SIZE)
			break;
		off += pre.total_size;
	}
	return c;
}

/* update_lost rewrites the header's count of what was not written, in place. Under mu. */
static void update_lost(void)
{
	struct stax_jitdump_lost l = {
		.magic = STAX_JITDUMP_LOST_MAGIC,
		.size = sizeof l,
		.functions = st.lost,
		.failed_writes = st.failed_writes,
		.error = st.last_err,
	};

	if (st.lost_fd >= 0 && pwrite(st.lost_fd, &l, sizeof l, sizeof(struct stax_jitdump_header)) != (ssize_t)sizeof l) {
		/* nothing more can be said in the file */
	}
}

/*
 * A write of the dump file failed (err) with the n bytes of records at b, of
 * which done were written: the file keeps the whole records written (stax may
 * have read them) and is cut back to the last of them, so that it holds no
 * torn one, and is given up with what is pending; the functions not written
 * are counted in the header from now on, and the failure is said once on
 * stderr.  Under mu.
 */
static void file_failed(const unsigned char *b, size_t n, size_t done, int err)
{
	char msg[4400];
	size_t keep = whole_records(b, n, done);
	int len;

	st.failed = 1;
	st.failed_writes++;
	st.last_err = (uint32_t)err;
	st.lost += count_loads(b + keep, n - keep) + count_loads(st.buf, st.len);
	st.len = 0;
	st.good += keep;
	if (st.fd >= 0) {
		if (ftruncate(st.fd, (off_t)st.good) != 0) {
			/* stax reads up to the last whole record and says the rest */
		}
		if (st.lost_fd >= 0)
			close(st.lost_fd);
		st.lost_fd = st.fd;
		st.fd = -1;
	}
	update_lost();
	len = snprintf(msg, sizeof(msg),
		       "stax: JIT collector: writing %s/jit-%d.dump failed (%s): it is given up; "
		       "%llu functions and every later one are not written (stax status counts them)\n",
		       st.dir, (int)st.pid, strerror(err), (unsigned long long)st.lost);
	if (len > 0 && write(2, msg, (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
}

/*
 * Writes the pending batch in the calling thread.  Under mu, with no writer
 * thread running (before it starts, after it stopped, or in place of one
 * that could not be started).
 */
static int flush_sync(void)
{
	int ok = 1;

	if (st.len && st.fd >= 0) {
		size_t done;

		ok = write_all(st.fd, st.buf, st.len, &done);
		st.n_writes++;
		st.n_bytes += st.len;
		if (ok) {
			st.good += st.len;
		} else {
			size_t n = st.len;
			int err = errno;

			st.len = 0;
			file_failed(st.buf, n, done, err);
		}
	}
	st.len = 0;
	if (st.cap > st.limit + BUF_SLACK) {
		free(st.buf);
		st.buf = NULL;
		st.cap = 0;
	}
	return ok;
}

/*
 * Ends the event that began at st.ev_start: drops its records if memory ran
 * out, else hands them to the writer thread (waking it when the batch was
 * empty), or writes them here when none runs.  Under mu.
 */
static int commit(void)
{
	if (st.scratch_cap > BUF_KEEP) {
		free(st.scratch);
		st.scratch = NULL;
		st.scratch_cap = 0;
	}
	if (st.oom) {
		st.len = st.ev_start;
		st.oom = 0;
		return 0;
	}
	if (st.len > st.max_pending)
		st.max_pending = st.len;
	if (st.writer) {
		/*
		 * The writer waits for the first record of a batch, then
		 * gathers records for GATHER_NS or until WAKE_BYTES are
		 * pending.  It is woken once the caller has released mu.
		 */
		if ((st.ev_start == 0 && st.len) ||
		    (st.ev_start < WAKE_BYTES && st.len >= WAKE_BYTES))
			st.wake = 1;
		return 1;
	}
	return flush_sync();
}

/*
 * The writer thread: takes the whole pending batch (swapping buffers under
 * mu) and writes it with mu released, until asked to stop with nothing
 * pending.
 */
static void *writer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		unsigned char *b;
		size_t n, c;
		int fd, ok, err = 0;
		size_t done = 0;

		while (st.len == 0 && !st.writer_stop)
			pthread_cond_wait(&data_cv, &mu);
		if (st.len < WAKE_BYTES && !st.writer_stop) {
			/*
			 * Gather more records before writing, so that a
			 * steady trickle of events is written in batches and
			 * callers need not wake this thread for each one.
			 */
			struct timespec ts;
			uint64_t until = now_ns() + GATHER_NS;

			ts.tv_sec = (time_t)(until / 1000000000u);
			ts.tv_nsec = (long)(until % 1000000000u);
			while (st.len < WAKE_BYTES && !st.writer_stop &&
			       pthread_cond_timedwait(&data_cv, &mu, &ts) == 0) {
			}
		}
		if (st.len == 0) {
			if (st.writer_stop)
				break;
			continue;
		}
		b = st.buf;
		c = st.cap;
		n = st.len;
		st.buf = st.wbuf;
		st.cap = st.wcap;
		st.wbuf = b;
		st.wcap = c;
		st.len = 0;
		st.writing = 1;
		fd = st.fd;
		pthread_cond_broadcast(&space_cv);
		pthread_mutex_unlock(&mu);

		ok = fd >= 0 && write_all(fd, b, n, &done);
		if (!ok)
			err = errno;

		pthread_mutex_lock(&mu);
		st.writing = 0;
		st.n_writes++;
		st.n_bytes += n;
		if (ok && fd >= 0 && st.fd == fd)
			st.good += n;
		if (!ok && fd >= 0 && st.fd == fd)
			file_failed(b, n, done, err);
		if (st.wcap > st.limit + BUF_SLACK) {
			/* one event was larger than the limit: back to the usual size */
			free(st.wbuf);
			st.wcap = st.limit + BUF_SLACK;
			st.wbuf = malloc(st.wcap);
			if (!st.wbuf)
				st.wcap = 0;
		}
	}
	st.writer = 0;
	pthread_cond_broadcast(&space_cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* Gives a buffer at least the usual capacity, keeping its contents. */
static void prealloc(unsigned char **b, size_t *cap)
{
	size_t want = st.limit + BUF_SLACK;
	unsigned char *nb;

	if (*cap >= want)
		return;
	nb = realloc(*b, want);
	if (nb) {
		*b = nb;
		*cap = want;
	}
}

/*
 * Starts the writer thread of this process, at its first event once the
 * dump file is open.  Under mu.  If no thread can be started, callers write
 * their records themselves as each event ends.
 */
static void start_writer(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	if (st.writer || st.writer_off)
		return;
	prealloc(&st.buf, &st.cap);
	prealloc(&st.wbuf, &st.wcap);
	if (pthread_attr_init(&attr) != 0) {
		st.writer_off = 1;
		return;
	}
	pthread_attr_setstacksize(&attr, WRITER_STACK);
	/* signals are for the application's threads, not for this one */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&st.writer_thread, &attr, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		st.writer_off = 1;
		return;
	}
	pthread_setname_np(st.writer_thread, "stax-jitwriter");
	st.writer = 1;
	st.writer_stop = 0;
}

/*
 * Stops the writer thread once it has written everything pending; from
 * then on callers write their own records.  Under mu, which is released
 * while waiting.
 */
static void stop_writer(void)
{
	st.writer_off = 1;
	if (!st.writer)
		return;
	if (!st.writer_stop) {
		pthread_t t = st.writer_thread;

		st.writer_stop = 1;
		pthread_cond_signal(&data_cv);
		pthread_mutex_unlock(&mu);
		pthread_join(t, NULL);
		pthread_mutex_lock(&mu);
	}
	while (st.writer)       /* another thread is joining it */
		pthread_cond_wait(&space_cv, &mu);
}

/* Waits while the pending batch is full.  Under mu, released while waiting. */
static void wait_space(void)
{
	uint64_t t0;

	if (!st.writer || st.len < st.limit)
		return;
	st.n_waits++;
	t0 = now_ns();
	while (st.writer && st.len >= st.limit)
		pthread_cond_wait(&space_cv, &mu);
	st.wait_ns += now_ns() - t0;
}

static void print_stats(void)
{
	char msg[512];
	int n;

	if (!st.stats || st.stats_done)
		return;
	st.stats_done = 1;
	n = snprintf(msg, sizeof(msg),
		     "stax: JIT collector pid %d: %llu events, %llu bytes in %llu writes, "
		     "max %zu bytes pending, %llu waits for buffer space (%llu us)\n",
		     (int)getpid(), (unsigned long long)st.n_events,
		     (unsigned long long)st.n_bytes, (unsigned long long)st.n_writes,
		     st.max_pending, (unsigned long long)st.n_waits,
		     (unsigned long long)(st.wait_ns / 1000));
	if (n > 0 && write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
}

/* ---- method table and region tree ---- */

static size_t hash_id(uint32_t id, size_t nbuckets)
{
	uint32_t h = id;

	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return (size_t)h & (nbuckets - 1);
}

static struct method *method_find(uint32_t id)
{
	struct method *m;

	if (!st.nbuckets)
		return NULL;
	for (m = st.buckets[hash_id(id, st.nbuckets)]; m; m = m->next)
		if (m->id == id)
			return m;
	return NULL;
}

static void table_grow(void)
{
	size_t n = st.nbuckets ? st.nbuckets * 2 : 1024;
	struct method **nb = calloc(n, sizeof(*nb));
	size_t i;

	if (!nb)
		return;
	for (i = 0; i < st.nbuckets; i++) {
		struct method *m = st.buckets[i], *next;

		for (; m; m = next) {
			size_t h = hash_id(m->id, n);

			next = m->next;
			m->next = nb[h];
			nb[h] = m;
		}
	}
	free(st.buckets);
	st.buckets = nb;
	st.nbuckets = n;
}

static struct method *method_get(uint32_t id)
{
	struct method *m = method_find(id);
	size_t h;

	if (m)
		return m;
	if (st.nmethods >= st.nbuckets)
		table_grow();
	if (!st.nbuckets)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->id = id;
	h = hash_id(id, st.nbuckets);
	m->next = st.buckets[h];
	st.buckets[h] = m;
	st.nmethods++;
	return m;
}

static void method_free(struct method *m)
{
	struct method **pp = &st.buckets[hash_id(m->id, st.nbuckets)];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	}
	st.nmethods--;
	free(m->name);
	free(m->source);
	free(m->regions);
	free(m);
}

/* Orders disjoint regions by address; overlapping regions compare equal. */
static int region_cmp(const void *a, const void *b)
{
	const struct region *x = a, *y = b;

	if (x->start + x->size <= y->start)
		return -1;
	if (y->start + y->size <= x->start)
		return 1;
	return 0;
}

static struct region *region_find(uint64_t start, uint64_t size)
{
	struct region key = { start, size, NULL };
	void *n = tfind(&key, &st.tree, region_cmp);

	return n ? *(struct region **)n : NULL;
}

/* Removes r from the tree and its method, and frees it. */
static void region_drop(struct region *r)
{
	struct method *m = r->m;
	uint32_t i;

	tdelete(r, &st.tree, region_cmp);
	for (i = 0; i < m->nregions; i++) {
		if (m->regions[i] == r) {
			m->regions[i] = m->regions[--m->nregions];
			break;
		}
	}
	free(r);
}

static int region_add(struct method *m, uint64_t start, uint64_t size)
{
	struct region *r;
	void *n;

	if (m->nregions == m->cap) {
		uint32_t nc = m->cap ? m->cap * 2 : 2;
		struct region **nr = realloc(m->regions, nc * sizeof(*nr));

		if (!nr)
			return 0;
		m->regions = nr;
		m->cap = nc;
	}
	r = malloc(sizeof(*r));
	if (!r)
		return 0;
	r->start = start;
	r->size = size;
	r->m = m;
	n = tsearch(r, &st.tree, region_cmp);
	if (!n || *(struct region **)n != r) {
		free(r);
		return 0;
	}
	m->regions[m->nregions++] = r;
	return 1;
}

static void table_free(void)
{
	size_t i;

	if (st.tree)
		tdestroy(st.tree, free);
	st.tree = NULL;
	for (i = 0; i < st.nbuckets; i++) {
		struct method *m = st.buckets[i], *next;

		for (; m; m = next) {
			next = m->next;
			free(m->name);
			free(m->source);
			free(m->regions);
			free(m);
		}
	}
	free(st.buckets);
	st.buckets = NULL;
	st.nbuckets = 0;
	st.nmethods = 0;
}

/* ---- names ---- */

/*
 * Builds "[module!][class::]method[ [32-bit]]" in a new string; a NULL or
 * empty method name becomes method_<id>.
 */
static char *compose_name(uint32_t id, const char *method, const char *cls,
			  const char *module, int arch32)
{
	char fallback[32];
	size_t ml = slen(method), cl = slen(cls), modl = slen(module);
	size_t total;
	char *s, *p;

	if (ml == 0) {
		snprintf(fallback, sizeof(fallback), "method_%u", id);
		method = fallback;
		ml = strlen(fallback);
	}
	if (cl && ml > cl && memcmp(method, cls, cl) == 0 &&
	    strchr(".:/$#", method[cl]) != NULL)
		cl = 0;
	total = (modl ? modl + 1 : 0) + (cl ? cl + 2 : 0) + ml + (arch32 ? 9 : 0) + 1;
	s = malloc(total);
	if (!s)
		return NULL;
	p = s;
	if (modl) {
		memcpy(p, module, modl);
		p += modl;
		*p++ = '!';
	}
	if (cl) {
		memcpy(p, cls, cl);
		p += cl;
		*p++ = ':';
		*p++ = ':';
	}
	memcpy(p, method, ml);
	p += ml;
	if (arch32) {
		memcpy(p, " [32-bit]", 9);
		p += 9;
	}
	*p = 0;
	return s;
}

/* ---- record builders (append to the record buffer) ---- */

static void add_unload(const struct region *r, uint64_t ts)
{
	unsigned char *p = reserve(UNLOAD_SIZE);

	if (!p)
		return;
	p = put_prefix(p, STAX_JITDUMP_STAX_CODE_UNLOAD, UNLOAD_SIZE, ts);
	(void)PUT(p, struct stax_jitdump_stax_code_unload, .code_addr = r->start, .code_size = r->size);
}

/*
 * DEBUG_INFO for the region at code_addr; entry addresses are base plus the
 * line table offsets.
 */
static void add_debug_info(uint64_t code_addr, uint64_t base,
			   const struct stax_jit_line *lines, size_t n,
			   const char *src, uint64_t ts)
{
	size_t sl = slen(src), per = DEBUG_ENTRY_FIXED + sl + 1, total, i;
	unsigned char *p;

	if (n > (DEBUG_REC_CAP - DEBUG_FIXED) / per)
		n = (DEBUG_REC_CAP - DEBUG_FIXED) / per;
	if (n == 0)
		return;
	total = DEBUG_FIXED + n * per;
	p = reserve(total);
	if (!p)
		return;
	p = put_prefix(p, STAX_JITDUMP_CODE_DEBUG_INFO, total, ts);
	p = PUT(p, struct stax_jitdump_debug_info, .code_addr = code_addr, .nr_entry = n);
	for (i = 0; i < n; i++) {
		p = PUT(p, struct stax_jitdump_debug_entry,
			.addr = base + lines[i].offset, .line = lines[i].line);
		p = putstr(p, src, sl);
	}
}

/* pre: the code bytes, copied before mu was taken, or NULL to copy them here */
static void add_code_load(uint32_t id, const char *name, uint64_t start,
			  uint64_t size, const unsigned char *pre, uint32_t tid, uint64_t ts)
{
	size_t nl = strlen(name);
	size_t total = LOAD_FIXED + nl + 1 + size;
	unsigned char *p, *code;
	size_t got;

	if (total > UINT32_MAX)
		return;
	p = reserve(total + METHOD_ID_SIZE);
	if (!p)
		return;
	p = put_prefix(p, STAX_JITDUMP_CODE_LOAD, total, ts);
	p = PUT(p, struct stax_jitdump_code_load, .pid = (uint32_t)st.pid, .tid = tid,
		.vma = start, .code_addr = start, .code_size = size, .code_index = st.code_index++);
	p = putstr(p, name, nl);
	code = p;
	if (pre) {
		memcpy(code, pre, size);
	} else {
		got = safe_copy(st.pid, code, start, size);
		if (got < size)
			memset(code + got, 0, size - got);
	}
	p += size;

	p = put_prefix(p, STAX_JITDUMP_STAX_METHOD_ID, METHOD_ID_SIZE, ts);
	(void)PUT(p, struct stax_jitdump_stax_method_id, .code_addr = start, .code_size = size,
		  .method_id = id);
}

/* ---- dump file ---- */

static void close_file(int write_close)
{
	if (st.fd >= 0 && write_close) {
		unsigned char *p;

		st.ev_start = st.len;
		p = reserve(PREFIX_SIZE);
		if (p)
			put_prefix(p, STAX_JITDUMP_CODE_CLOSE, PREFIX_SIZE, now_ns());
		else
			st.len = st.ev_start;
		st.oom = 0;
		flush_sync();
	}
	if (st.marker) {
		munmap(st.marker, st.marker_len);
		st.marker = NULL;
	}
	if (st.fd >= 0) {
		close(st.fd);
		st.fd = -1;
	}
	if (st.lost_fd >= 0) {
		close(st.lost_fd);
		st.lost_fd = -1;
	}
}

static void reannounce(void)
{
	size_t i;
	uint32_t tid = tid_now();

	for (i = 0; i < st.nbuckets && st.fd >= 0; i++) {
		struct method *m;

		for (m = st.buckets[i]; m; m = m->next) {
			uint32_t j;

			for (j = 0; j < m->nregions; j++) {
				struct region *r = m->regions[j];
				char *fb = NULL;
				const char *name = m->name;

				if (!name)
					name = fb = compose_name(m->id, NULL, NULL, NULL, 0);
				st.ev_start = st.len;
				if (name)
					add_code_load(m->id, name, r->start, r->size, NULL, tid,
						      now_ns());
				free(fb);
				if (st.oom) {
					st.len = st.ev_start;
					st.oom = 0;
				}
				if (st.len >= BUF_KEEP)
					flush_sync();
			}
		}
	}
	flush_sync();
}

/*
 * Creates path exclusively, without following a link, mode 0600.  An
 * existing regular file of this process's effective uid (left by an earlier
 * process with the same pid) is removed first.  A link, a file of another
 * kind or of another user is refused, so that another user of a shared
 * directory cannot make this process overwrite or remove a file: -1 with
 * *why saying so.
 */
static int create_new(const char *path, const char **why)
{
	int retried;

	for (retried = 0;; retried = 1) {
		struct stat sb;
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

		if (fd >= 0 || errno != EEXIST || retried)
			return fd;
		if (lstat(path, &sb) != 0) {
			if (errno == ENOENT)
				continue;
			return -1;
		}
		if (S_ISLNK(sb.st_mode)) {
			*why = "it is a symbolic link, which is not followed; remove it";
			return -1;
		}
		if (!S_ISREG(sb.st_mode)) {
			*why = "it exists and is not a regular file; remove it";
			return -1;
		}
		if (sb.st_uid != geteuid()) {
			*why = "it exists and belongs to another user; remove it";
			return -1;
		}
		/* unlink never follows a link; the file is then created exclusively */
		if (unlink(path) != 0 && errno != ENOENT)
			return -1;
	}
}

static int open_file(void)
{
	char path[4096];
	struct {
		struct stax_jitdump_header h;
		struct stax_jitdump_lost l;
	} hdr;
	long pg = sysconf(_SC_PAGESIZE);
	const char *why = NULL;
	int fd;

	if (snprintf(path, sizeof(path), "%s/jit-%d.dump", st.dir, (int)st.pid) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	fd = create_new(path, &why);
	if (fd < 0)
		goto fail;
	memset(&hdr, 0, sizeof hdr);
	hdr.h = (struct stax_jitdump_header){
		.magic = STAX_JITDUMP_MAGIC,
		.version = STAX_JITDUMP_VERSION,
		.total_size = sizeof(hdr),
		.elf_mach = STAX_JITDUMP_ELF_MACH,
		.pid = (uint32_t)st.pid,
		.timestamp = now_ns(),
	};
	hdr.l = (struct stax_jitdump_lost){ .magic = STAX_JITDUMP_LOST_MAGIC, .size = sizeof hdr.l };
	if (write(fd, &hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr)) {
		/* without a header nothing can be counted: no file rather than a torn one */
		unlink(path);
		close(fd);
		goto fail;
	}
	st.fd = fd;
	st.good = sizeof(hdr);
	/*
	 * An executable mapping of the file makes perf record log its name,
	 * which is how perf inject --jit finds jitdump files.  Optional.
	 */
	st.marker_len = pg > 0 ? (size_t)pg : 4096;
	st.marker = mmap(NULL, st.marker_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (st.marker == MAP_FAILED)
		st.marker = NULL;
	if (st.inherited) {
		st.inherited = 0;
		reannounce();
	}
	return st.fd >= 0;
fail:
	{
		char msg[4300];
		int n = snprintf(msg, sizeof(msg),
				 "stax: JIT collector cannot write %s: %s\n", path,
				 why ? why : strerror(errno));

		if (n > 0 && write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0) {
			/* nothing more to do */
		}
	}
	st.failed = 1;
	return 0;
}

/*
 * In a forked child: the parent's writer thread does not exist here, and
 * the records pending in the parent are the parent's to write.
 */
static void forget_writer(void)
{
	st.len = 0;
	st.oom = 0;
	st.writer = 0;
	st.writer_stop = 0;
	st.writer_off = 0;
	st.writing = 0;
	st.n_events = st.n_writes = st.n_bytes = st.n_waits = st.wait_ns = 0;
	st.max_pending = 0;
	st.stats_done = 0;
}

/* Forgets the parent's file and writer after fork.  Under mu. */
static void check_pid(pid_t pid)
{
	if (pid != st.pid) {
		if (st.pid != 0) {
			/* forked: the open file belongs to the parent */
			if (st.marker) {
				munmap(st.marker, st.marker_len);
				st.marker = NULL;
			}
			if (st.fd >= 0)
				close(st.fd);
			if (st.lost_fd >= 0)
				close(st.lost_fd);
			st.inherited = st.tree != NULL;
			forget_writer();
		}
		st.fd = -1;
		st.lost_fd = -1;
		st.lost = 0;
		st.failed_writes = st.last_err = 0;
		st.failed = 0;
		st.pid = pid;
	}
}

/*
 * Makes sure the dump file of the current process is open (writing its
 * header, and in a forked child the inherited regions, right away) and its
 * writer thread started.  Under mu.
 */
static int ready(pid_t pid)
{
	check_pid(pid);
	if (__atomic_load_n(&st.shut, __ATOMIC_RELAXED) || st.failed)
		return 0;
	if (st.fd < 0 && !open_file())
		return 0;
	start_writer();
	return 1;
}

/* ---- event handlers (under mu, file ready) ---- */

struct load {
	uint32_t id;
	const char *name, *cls, *src, *module;
	uint64_t addr;
	uint64_t size;
	uint32_t nlines;
	const struct stax_jit_line *lines;
	int arch32;
	int update;             /* re-announce instead of adding a region */

	/* copied before taking mu (see precopy), when pre is set */
	unsigned char *pre;     /* code bytes, then the line table */
	size_t pre_code;        /* bytes of code: min(size, CODE_CAP) */
	const struct stax_jit_line *pre_lines;
	size_t pre_nlines;
};

/*
 * Copies a load's code bytes and line table before mu is taken, so that the
 * mutex is held only to update the tables and append records.  Loads that
 * are not copied here (updates, whose range is only known under mu, or when
 * memory is short) are copied under mu as before.
 */
static void precopy(struct load *a, pid_t pid)
{
	size_t csize, nl = 0, lbytes, total;

	if (a->update || a->id == 0 || a->addr == 0 || a->size == 0)
		return;
	csize = a->size < CODE_CAP ? (size_t)a->size : CODE_CAP;
	if (a->addr + csize < a->addr)
		return;
	if (a->nlines && a->lines)
		nl = a->nlines < LINES_CAP ? a->nlines : LINES_CAP;
	lbytes = nl * sizeof(struct stax_jit_line);
	total = csize + lbytes;
	a->pre = malloc(total ? total : 1);
	if (!a->pre)
		return;
	{
		size_t got = safe_copy(pid, a->pre, a->addr, csize);

		if (got < csize)
			memset(a->pre + got, 0, csize - got);
	}
	a->pre_code = csize;
	if (nl) {
		/* keep the lines aligned: csize may be odd */
		struct stax_jit_line *l = (struct stax_jit_line *)(void *)(a->pre + csize);

		if (((uintptr_t)l & (_Alignof(struct stax_jit_line) - 1)) == 0) {
			a->pre_nlines = safe_copy(pid, l, (uint64_t)(uintptr_t)a->lines, lbytes) /
					sizeof(struct stax_jit_line);
			a->pre_lines = l;
		} else {
			free(a->pre);
			a->pre = NULL;
		}
	}
}

static int do_load(const struct load *a)
{
	struct method *m;
	const char *name, *src;
	char *tmpname = NULL;
	const struct stax_jit_line *lines = NULL;
	size_t nlines = 0, csize;
	uint64_t ts, start;
	uint32_t tid;
	struct region *r;

	if (a->id == 0 || a->addr == 0 || a->size == 0)
		return 0;
	csize = a->size < CODE_CAP ? (size_t)a->size : CODE_CAP;
	if (a->addr + csize < a->addr)
		return 0;
	m = method_get(a->id);
	if (!m)
		return 0;

	/* name: the first one reported for this method id */
	if (!m->name && slen(a->name))
		m->name = compose_name(a->id, a->name, a->cls, a->module, a->arch32);
	name = m->name;
	if (!name) {
		name = tmpname = compose_name(a->id, NULL, a->cls, a->module, a->arch32);
		if (!name)
			return 0;
	}
	if (!m->source && slen(a->src))
		m->source = strndup(a->src, STR_CAP);
	src = slen(a->src) ? a->src : m->source;

	/* line table */
	if (a->pre) {
		lines = a->pre_lines;
		nlines = a->pre_nlines;
	} else if (a->nlines && a->lines) {
		size_t want = a->nlines < LINES_CAP ? a->nlines : LINES_CAP;
		size_t bytes = want * sizeof(struct stax_jit_line);

		if (bytes > st.scratch_cap) {
			unsigned char *ns = realloc(st.scratch, bytes);

			if (ns) {
				st.scratch = ns;
				st.scratch_cap = bytes;
			}
		}
		if (bytes <= st.scratch_cap) {
			nlines = safe_copy(st.pid, st.scratch, (uint64_t)(uintptr_t)a->lines, bytes) /
				 sizeof(struct stax_jit_line);
			lines = (const struct stax_jit_line *)st.scratch;
		}
	}

	ts = now_ns();
	tid = tid_now();
	start = a->addr;

	if (a->update) {
		/*
		 * An update inside a known region of the method re-announces
		 * that region; otherwise the method's regions are replaced by
		 * the new one.
		 */
		uint32_t i;

		for (i = 0; i < m->nregions; i++) {
			r = m->regions[i];
			if (r->start <= a->addr && a->addr + csize <= r->start + r->size)
				break;
		}
		if (i < m->nregions) {
			r = m->regions[i];
			start = r->start;
			csize = r->size;
			add_unload(r, ts);
			region_drop(r);
		} else {
			while (m->nregions) {
				add_unload(m->regions[0], ts);
				region_drop(m->regions[0]);
			}
		}
	}

	/* a new region ends every live region it overlaps */
	while ((r = region_find(start, csize)) != NULL) {
		struct method *om = r->m;

		region_drop(r);
		if (om != m && om->nregions == 0)
			method_free(om);
	}

	if (nlines)
		add_debug_info(start, a->addr, lines, nlines, src ? src : "", ts);
	add_code_load(a->id, name, start, csize,
		      a->pre && start == a->addr && csize == a->pre_code ? a->pre : NULL, tid, ts);
	free(tmpname);
	if (st.oom)
		return commit();        /* drops the event's records */
	region_add(m, start, csize);
	return commit();
}

static int do_inline(const struct stax_jit_inline_load *d)
{
	char *name;
	size_t nl, sl, total;
	unsigned char *p;

	if (d->method_id == 0 || d->parent_method_id == 0 || !d->load_address || d->size == 0)
		return 0;
	if ((uint64_t)(uintptr_t)d->load_address + d->size < (uint64_t)(uintptr_t)d->load_address)
		return 0;
	name = compose_name(d->method_id, d->method_name, d->class_name, NULL, 0);
	if (!name)
		return 0;
	nl = strlen(name);
	sl = slen(d->source_file);
	total = INLINE_FIXED + nl + 1 + sl + 1;
	p = reserve(total);
	if (p) {
		p = put_prefix(p, STAX_JITDUMP_STAX_INLINE, total, now_ns());
		p = PUT(p, struct stax_jitdump_stax_inline, .method_id = d->method_id,
			.parent_method_id = d->parent_method_id,
			.start = (uint64_t)(uintptr_t)d->load_address, .size = d->size);
		p = putstr(p, name, nl);
		putstr(p, d->source_file, sl);
	}
	free(name);
	return commit();
}

static int do_unload(uint32_t id)
{
	struct method *m = id ? method_find(id) : NULL;
	uint64_t ts = now_ns();

	if (!m)
		return 0;
	while (m->nregions) {
		add_unload(m->regions[0], ts);
		region_drop(m->regions[0]);
	}
	method_free(m);
	return commit();
}

static int do_update_v2(const struct stax_jit_method_update *d)
{
	struct region *r;
	struct load a;

	if (!d->load_address || d->size == 0)
		return 0;
	r = region_find((uint64_t)(uintptr_t)d->load_address, 1);
	if (!r)
		return 0;
	memset(&a, 0, sizeof(a));
	a.id = r->m->id;
	a.addr = r->start;
	a.size = r->size;
	a.update = 1;
	return do_load(&a);
}

/* Under mu, with the writer thread stopped. */
static void do_shutdown(void)
{
	close_file(1);
	__atomic_store_n(&st.shut, 1, __ATOMIC_RELAXED);
	print_stats();
	table_free();
	st.len = 0;
	st.oom = 0;
	free(st.buf);
	st.buf = NULL;
	st.cap = 0;
	free(st.wbuf);
	st.wbuf = NULL;
	st.wcap = 0;
	free(st.scratch);
	st.scratch = NULL;
	st.scratch_cap = 0;
}

/* ---- fork and initialization ---- */

/* data_cv's timed waits use CLOCK_MONOTONIC, like now_ns. */
static void cv_init(void)
{
	pthread_condattr_t ca;

	pthread_cond_init(&space_cv, NULL);
	if (pthread_condattr_init(&ca) == 0) {
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&data_cv, &ca);
		pthread_condattr_destroy(&ca);
	} else {
		pthread_cond_init(&data_cv, NULL);
	}
}

static void atfork_prepare(void)
{
	pthread_mutex_lock(&mu);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&mu);
}

static void atfork_child(void)
{
	/*
	 * The child's first event notices the new pid, starts its file and
	 * its own writer thread.  The condition variables may record waiters
	 * (the parent's writer) that do not exist here.
	 */
	forget_writer();
	__atomic_add_fetch(&fork_gen, 1, __ATOMIC_RELAXED);
	cv_init();
	pthread_mutex_unlock(&mu);
}

/*
 * At exit (and dlclose): the writer thread writes everything pending and
 * stops; events sent after this (by other threads, or by later exit
 * handlers) are written by their callers.
 */
__attribute__((destructor)) static void fini(void)
{
	if (!__atomic_load_n(&st.enabled, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&mu);
	check_pid(getpid());
	stop_writer();
	flush_sync();
	print_stats();
	pthread_mutex_unlock(&mu);
}

static void init(void)
{
	const char *on = getenv(STAX_ENV_COLLECT);
	const char *dir = getenv(STAX_ENV_DIR);
	const char *kb = getenv("STAX_JIT_BUFFER_KB");
	const char *stats = getenv("STAX_JIT_STATS");
	unsigned long limit = LIMIT_DEFAULT_KB;

	if (!on || strcmp(on, "1") != 0)
		return;
	if (kb && *kb) {
		char *end;
		unsigned long v = strtoul(kb, &end, 10);

		if (*end == 0 && *kb != '-')
			limit = v < LIMIT_MIN_KB ? LIMIT_MIN_KB : v > LIMIT_MAX_KB ? LIMIT_MAX_KB : v;
	}
	st.limit = (size_t)limit << 10;
	st.stats = stats && strcmp(stats, "1") == 0;
	cv_init();
	st.dir = strdup(dir && *dir ? dir : STAX_DEFAULT_DIR);
	if (!st.dir)
		return;
	if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0)
		return;
	__atomic_store_n(&st.enabled, 1, __ATOMIC_RELEASE);
}

/* ---- exported API ---- */

STAX_EXPORT unsigned int Initialize(void)
{
	pthread_once(&init_once, init);
	return __atomic_load_n(&st.enabled, __ATOMIC_ACQUIRE) ? STAX_JIT_SAMPLING_ON :
							       STAX_JIT_NOTHING_RUNNING;
}

STAX_EXPORT int NotifyEvent(int event_type, void *data)
{
	struct load a;
	pid_t pid;
	int ret = 0, wake;

	pthread_once(&init_once, init);
	if (!__atomic_load_n(&st.enabled, __ATOMIC_ACQUIRE))
		return 0;
	if (!data && event_type != STAX_JIT_EV_SHUTDOWN)
		return 0;
	memset(&a, 0, sizeof(a));
	switch (event_type) {
	case STAX_JIT_EV_SHUTDOWN:
	case STAX_JIT_EV_METHOD_INLINE_LOAD_FINISHED:
	case STAX_JIT_EV_METHOD_UNLOAD_START:
	case STAX_JIT_EV_METHOD_UPDATE_V2:
		break;
	case STAX_JIT_EV_METHOD_LOAD_FINISHED:
	case STAX_JIT_EV_METHOD_UPDATE: {
		const struct stax_jit_method_load *d = data;

		a.id = d->method_id;
		a.name = d->method_name;
		a.cls = d->class_name;
		a.src = d->source_file;
		a.addr = (uint64_t)(uintptr_t)d->load_address;
		a.size = d->size;
		a.nlines = d->line_count;
		a.lines = d->lines;
		a.update = event_type == STAX_JIT_EV_METHOD_UPDATE;
		break;
	}
	case STAX_JIT_EV_METHOD_LOAD_FINISHED_V2: {
		const struct stax_jit_method_load_v2 *d = data;

		a.id = d->method_id;
		a.name = d->method_name;
		a.cls = d->class_name;
		a.src = d->source_file;
		a.module = d->module_name;
		a.addr = (uint64_t)(uintptr_t)d->load_address;
		a.size = d->size;
		a.nlines = d->line_count;
		a.lines = d->lines;
		break;
	}
	case STAX_JIT_EV_METHOD_LOAD_FINISHED_V3: {
		const struct stax_jit_method_load_v3 *d = data;

		a.id = d->method_id;
		a.name = d->method_name;
		a.cls = d->class_name;
		a.src = d->source_file;
		a.module = d->module_name;
		a.addr = (uint64_t)(uintptr_t)d->load_address;
		a.size = d->size;
		a.nlines = d->line_count;
		a.lines = d->lines;
		a.arch32 = d->arch == STAX_JIT_ARCH_32;
		break;
	}
	default:
		return 0;
	}

	pid = getpid();
	if (event_type != STAX_JIT_EV_SHUTDOWN && __atomic_load_n(&st.shut, __ATOMIC_RELAXED))
		return 0;       /* read without mu: a hint, checked again under it */
	precopy(&a, pid);

	pthread_mutex_lock(&mu);
	if (event_type == STAX_JIT_EV_SHUTDOWN) {
		check_pid(pid); /* forget a parent's file; do not create one */
		if (!__atomic_load_n(&st.shut, __ATOMIC_RELAXED)) {
			stop_writer();  /* everything pending is written first */
			if (!__atomic_load_n(&st.shut, __ATOMIC_RELAXED)) {
				do_shutdown();
				ret = 1;
			}
		}
		pthread_mutex_unlock(&mu);
		return ret;
	}
	if (!ready(pid)) {
		if (st.lost_fd >= 0 && st.pid == pid && !__atomic_load_n(&st.shut, __ATOMIC_RELAXED) &&
		    (event_type == STAX_JIT_EV_METHOD_LOAD_FINISHED || event_type == STAX_JIT_EV_METHOD_UPDATE ||
		     event_type == STAX_JIT_EV_METHOD_LOAD_FINISHED_V2 ||
		     event_type == STAX_JIT_EV_METHOD_LOAD_FINISHED_V3)) {
			st.lost++; /* the file was given up: counted, not written */
			update_lost();
		}
		goto out;
	}
	if (st.writer && st.len >= st.limit) {
		wait_space();
		if (!ready(pid))
			goto out;
	}
	st.ev_start = st.len;
	st.n_events++;
	switch (event_type) {
	case STAX_JIT_EV_METHOD_LOAD_FINISHED:
	case STAX_JIT_EV_METHOD_UPDATE:
	case STAX_JIT_EV_METHOD_LOAD_FINISHED_V2:
	case STAX_JIT_EV_METHOD_LOAD_FINISHED_V3:
		ret = do_load(&a);
		break;
	case STAX_JIT_EV_METHOD_INLINE_LOAD_FINISHED:
		ret = do_inline(data);
		break;
	case STAX_JIT_EV_METHOD_UNLOAD_START:
		ret = do_unload(((const struct stax_jit_method_id *)data)->method_id);
		break;
	case STAX_JIT_EV_METHOD_UPDATE_V2:
		ret = do_update_v2(data);
		break;
	}
out:
	wake = st.wake;
	st.wake = 0;
	pthread_mutex_unlock(&mu);
	if (wake)
		pthread_cond_signal(&data_cv);
	free(a.pre);
	return ret;
}

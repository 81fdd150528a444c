/*
 * stax_itt.c - ITT API collector for stax: tasks and markers as spans.
 *
 * ittapi's static part loads the library named by INTEL_LIBITTNOTIFY64 and
 * calls __itt_api_init, which fills the entries of its API list this
 * collector implements: __itt_task_begin, __itt_task_end, __itt_marker,
 * __itt_frame_begin_v3 and __itt_frame_end_v3 (a frame is a span named
 * after its domain), and __itt_thread_set_name, which names the thread as
 * pthread_setname_np does (its first 15 bytes), so that stax shows it.
 * Tasks still open when their thread exits, or on the exiting thread at
 * process exit, are written as ending then, marked unfinished; ends
 * without a begin are counted (NOTE records).
 * Every other entry is left as the static part set it (domains and string
 * handles are made there).  Nothing is filled unless STAX_JIT_COLLECT=1.
 *
 * Each thread keeps its open tasks (at most STAX_ITT_MAX_DEPTH nested) and
 * a buffer of finished ones.  A task's begin and end take no lock and make
 * no system call but clock_gettime (vDSO): the thread appends to its buffer
 * and publishes the buffer's length; each buffer has its own mutex, which
 * its thread takes only to write the buffer and the exit flush to write
 * what the thread has published so far.  A buffer is appended to <dir>/itt-<pid>.spans (dir:
 * STAX_JIT_DIR, default /tmp) with one write when it is full, when 50 ms
 * have passed since its last write (so a live run sees its spans), when
 * its thread exits, and at process exit.  The file is bounded by
 * STAX_ITT_MAX_MB (default 256); what does not fit is counted in DROP
 * records.  A write that fails (a full file system) or falls short is
 * completed or rolled back: the file is cut back to its last whole record,
 * the write's tasks and markers are counted as dropped (in a DROP record
 * once a write succeeds again, and at once in the header's count, updated
 * in place), and the first failure is said once on stderr.  The format is
 * described in stax_itt.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "stax_abi.h"
#include "stax_itt.h"

#define STAX_EXPORT __attribute__((visibility("default")))

#define ITT_BUF (32u << 10)       /* bytes buffered per thread */
#define ITT_FLUSH_NS 50000000ull  /* a buffer older than this is written */
#define ITT_NAMES 256             /* keys whose NAME a thread remembers writing */
#define ITT_MAX_MB_DEFAULT 256u
#define ITT_FRAMES 8              /* domains with a frame open at once, per thread */

struct open_task {
	const stax_itt_string_handle *name;
	uint64_t start;
};

struct open_frame {
	const stax_itt_domain *domain;
	uint64_t start;
};

/*
 * A thread's buffer.  Its thread alone appends records and changes len (an
 * atomic store, so that the exit flush of another thread sees the records
 * before it); mu guards done, the counts, and writing the buffer.
 */
struct tbuf {
	pthread_mutex_t mu; /* writing the buffer: its thread, and the exit flush */
	uint32_t tid;
	int depth;         /* open tasks kept */
	unsigned over;     /* open tasks past STAX_ITT_MAX_DEPTH */
	uint64_t dropped;  /* not written yet: reported in a DROP record (mu) */
	uint64_t unmatched;  /* task ends without a begin, not reported yet (mu) */
	uint64_t unfinished; /* open tasks not written (process exit), not reported yet (mu) */
	uint64_t last_write; /* the thread's own */
	size_t len;        /* bytes of buf filled; written by the thread alone */
	size_t done;       /* bytes of buf the exit flush wrote already (mu) */
	const void *named[ITT_NAMES];
	struct open_task stack[STAX_ITT_MAX_DEPTH];
	struct open_frame frames[ITT_FRAMES]; /* open frames, one per domain */
	int nframes;
	struct tbuf *next; /* in the process's list, under list_mu */
	unsigned char buf[ITT_BUF];
};

/* Lock order: list_mu, then a thread's mu, then file_mu. */
static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER; /* the list of threads */
static pthread_mutex_t file_mu = PTHREAD_MUTEX_INITIALIZER; /* the file and its size */
static struct tbuf *threads;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int enabled;
static char *dir;
static int fd = -1;
static int file_pid;   /* the process fd was opened by; fork makes a new file */
static int file_failed;
static uint64_t max_bytes;
static uint64_t written; /* bytes in the file: whole records only (file_mu) */
static uint64_t dropped_total; /* tasks and markers not written, all threads (atomic) */
static uint64_t hdr_dropped;   /* dropped_total as last written to the header (file_mu) */
static uint32_t failed_writes, last_errno; /* (file_mu) */
static uint32_t hdr_failed;    /* failed_writes as last written to the header (file_mu) */
static int warned;             /* a failed write was said on stderr (file_mu) */


static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* count_drop counts n tasks or markers of t not written; t->mu must be held. */
static void count_drop(struct tbuf *t, uint64_t n)
{
	t->dropped += n;
	__atomic_add_fetch(&dropped_total, n, __ATOMIC_RELAXED);
}

/* start_ticks is the process's start time, field 22 of /proc/self/stat; 0 if unknown. */
static uint64_t start_ticks(void)
{
	char b[1024], *p;
	ssize_t n;
	int f = open("/proc/self/stat", O_RDONLY | O_CLOEXEC), i;

	if (f < 0)
		return 0;
	n = read(f, b, sizeof b - 1);
	close(f);
	if (n <= 0)
		return 0;
	b[n] = 0;
	p = strrchr(b, ')'); /* the command name may hold spaces and parentheses */
	if (!p)
		return 0;
	for (i = 2; i < 22 && p; i++) /* p is at the end of field 2 */
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* update_header writes the counts of what was not written into the header, in place
 * (the header's bytes exist: this needs no room); file_mu must be held. */
static void update_header(void)
{
	uint64_t d = __atomic_load_n(&dropped_total, __ATOMIC_RELAXED);
	uint32_t fw[2] = { failed_writes, last_errno };

	if (fd < 0 || file_failed || (d == hdr_dropped && failed_writes == hdr_failed))
		return;
	if (pwrite(fd, &d, 8, STAX_ITT_HDR_DROPPED) == 8)
		hdr_dropped = d;
	if (pwrite(fd, fw, 8, STAX_ITT_HDR_FAILED) == 8)
		hdr_failed = failed_writes;
}

/* warn says msg and the error on stderr. */
static void warn(const char *msg, const char *path, int err)
{
	char b[4300];
	int n = snprintf(b, sizeof b, "stax itt collector: %s %s: %s\n", msg, path, strerror(err));

	if (n > 0 && write(2, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1) < 0) {
		/* nothing more to do */
	}
}

/*
 * put_all writes the n vectors at the file's end (written), completing short
 * writes, and returns the bytes written: all of them, or fewer when a write
 * failed (*err set).  file_mu must be held.
 */
static size_t put_all(int f, struct iovec *iov, int n, int *err)
{
	uint64_t at = written;

	while (n > 0) {
		ssize_t w = pwritev(f, iov, n, (off_t)at);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			*err = w < 0 ? errno : ENOSPC;
			break;
		}
		at += (uint64_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return (size_t)(at - written);
}

/* whole is how many bytes of the records at p (n bytes) are whole records within their
 * first w bytes. */
static size_t whole(const unsigned char *p, size_t n, size_t w)
{
	size_t off = 0;

	while (off + 8 <= n) {
		uint16_t size;

		memcpy(&size, p + off + 2, 2);
		if (size < 8 || off + size > w)
			break;
		off += size;
	}
	return off;
}

/* open_file creates the process's spans file; file_mu must be held. */
static void open_file(void)
{
	char path[4096];
	unsigned char hdr[STAX_ITT_HEADER] = STAX_ITT_FILE_MAGIC;
	uint32_t pid = (uint32_t)getpid(), hsize = STAX_ITT_HEADER;
	uint64_t start = start_ticks();
	struct stat sb;

	if (file_pid == (int)pid && (fd >= 0 || file_failed))
		return;
	if (fd >= 0)
		close(fd); /* the parent's, inherited through fork */
	fd = -1;
	file_pid = (int)pid;
	file_failed = 1;
	written = 0;
	if (snprintf(path, sizeof path, "%s/" STAX_ITT_SPANS_PREFIX "%u" STAX_SPANS_SUFFIX, dir, pid) >= (int)sizeof path)
		return;
	/* An old file of ours is replaced; a link or another user's file is left alone. */
	if (lstat(path, &sb) == 0) {
		if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid()) {
			fprintf(stderr, "stax itt collector: %s exists and is not a file of this user; spans are not written\n", path);
			return;
		}
		unlink(path);
	}
	/* Not O_APPEND: the header's counts are rewritten in place (pwrite), records are
	 * written at written. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		fprintf(stderr, "stax itt collector: create %s: %s\n", path, strerror(errno));
		return;
	}
	memcpy(hdr + STAX_ITT_HDR_PID, &pid, 4);
	memcpy(hdr + STAX_ITT_HDR_SIZE, &hsize, 4);
	memcpy(hdr + STAX_ITT_HDR_START, &start, 8);
	if (pwrite(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr) {
		/* Without a header nothing can be counted: no file is better than an empty one. */
		warn("cannot write the header of", path, errno);
		unlink(path);
		close(fd);
		fd = -1;
		return;
	}
	written = sizeof hdr;
	file_failed = 0;
	hdr_dropped = 0;
	hdr_failed = 0;
	update_header(); /* drops counted before the file existed */
}

/* head writes a record's type, size and thread id at p. */
static void head(unsigned char *p, uint16_t type, uint16_t size, uint32_t tid)
{
	memcpy(p, &type, 2);
	memcpy(p + 2, &size, 2);
	memcpy(p + 4, &tid, 4);
}

/* put appends a record to t's buffer; the caller is t's thread and made room. */
static void put(struct tbuf *t, uint16_t type, const void *body, size_t n)
{
	uint16_t size = (uint16_t)((8 + n + 7) & ~(size_t)7);
	unsigned char *p = t->buf + t->len;

	head(p, type, size, t->tid);
	memcpy(p + 8, body, n);
	memset(p + 8 + n, 0, size - 8 - n);
	__atomic_store_n(&t->len, t->len + size, __ATOMIC_RELEASE);
}

/* count_spans counts the tasks and markers of the n bytes of records at p. */
static uint64_t count_spans(const unsigned char *p, size_t n)
{
	uint64_t c = 0;
	size_t off = 0;

	while (off + 8 <= n) {
		uint16_t type, size;

		memcpy(&type, p + off, 2);
		memcpy(&size, p + off + 2, 2);
		if (type == STAX_ITT_TASK || type == STAX_ITT_MARK)
			c++;
		if (size < 8)
			break;
		off += size;
	}
	return c;
}

/*
 * flush writes what t's buffer holds and the counts not reported yet (DROP
 * and NOTE records after the buffer's, in the same write); the caller holds
 * t->mu.  own: the caller is t's thread, which then empties the buffer;
 * another thread (the exit flush) writes what t has published and leaves
 * the buffer to t.
 */
static void flush(struct tbuf *t, uint64_t now, int own)
{
	size_t len = own ? t->len : __atomic_load_n(&t->len, __ATOMIC_ACQUIRE);
	size_t off = t->done;
	unsigned char extra[40];
	size_t nextra = 0;
	struct iovec iov[2];
	int f, n = 0;
	uint64_t room, drop = 0, unmatched = 0, unfinished = 0;
	size_t w = 0;
	int err = 0;

	if (own)
		t->last_write = now;
	if (len == off && t->dropped == 0 && t->unmatched == 0 && t->unfinished == 0)
		goto out;
	pthread_mutex_lock(&file_mu);
	open_file();
	f = fd;
	room = written < max_bytes ? max_bytes - written : 0;
	if (f >= 0 && len - off > room) {
		/* The file is at its bound: the records are dropped and counted. */
		count_drop(t, count_spans(t->buf + off, len - off));
		off = len;
	}
	if (f >= 0 && t->dropped > 0) {
		head(extra, STAX_ITT_DROP, 16, t->tid);
		memcpy(extra + 8, &t->dropped, 8);
		nextra = 16;
		drop = t->dropped;
		t->dropped = 0;
	}
	if (f >= 0 && (t->unmatched > 0 || t->unfinished > 0)) {
		head(extra + nextra, STAX_ITT_NOTE, 24, t->tid);
		memcpy(extra + nextra + 8, &t->unmatched, 8);
		memcpy(extra + nextra + 16, &t->unfinished, 8);
		nextra += 24;
		unmatched = t->unmatched;
		unfinished = t->unfinished;
		t->unmatched = t->unfinished = 0;
	}
	/* The counts first: a write cut short keeps them if it can. */
	if (nextra > 0) {
		iov[n].iov_base = extra;
		iov[n++].iov_len = nextra;
	}
	if (f >= 0 && len > off) {
		iov[n].iov_base = t->buf + off;
		iov[n++].iov_len = len - off;
	}
	if (n > 0 && (w = put_all(f, iov, n, &err)) < nextra + len - off) {
		/*
		 * The write failed, maybe after some of it was written: the file keeps the whole
		 * records written (stax may have read them) and is cut back to the last of them,
		 * so that it never holds a torn record; the spans of the rest are dropped, and
		 * its counts kept for the next write.
		 */
		size_t keep = w < nextra ? whole(extra, nextra, w) : nextra + whole(t->buf + off, len - off, w - nextra);

		if (keep < w && ftruncate(f, (off_t)(written + keep)) != 0) {
			/* the next write at written overwrites the torn bytes */
		}
		written += keep;
		if (drop > 0 && keep < 16)
			t->dropped += drop;
		if ((unmatched > 0 || unfinished > 0) && keep < (drop > 0 ? 16u : 0u) + 24u) {
			t->unmatched += unmatched;
			t->unfinished += unfinished;
		}
		keep = keep > nextra ? keep - nextra : 0;
		count_drop(t, count_spans(t->buf + off + keep, len - off - keep));
		failed_writes++;
		last_errno = (uint32_t)err;
		if (!warned) {
			char path[4096];

			warned = 1;
			snprintf(path, sizeof path, "%s/" STAX_ITT_SPANS_PREFIX "%d" STAX_SPANS_SUFFIX, dir, file_pid);
			warn("cannot write", path, err);
		}
	} else if (n > 0) {
		written += w;
	}
	if (f >= 0)
		update_header();
	pthread_mutex_unlock(&file_mu);
out:
	if (own) {
		__atomic_store_n(&t->len, 0, __ATOMIC_RELEASE);
		t->done = 0;
	} else {
		t->done = len;
	}
}

/* room makes n bytes free in t's buffer, writing it if need be; the caller is t's
 * thread and does not hold t->mu. */
static void room(struct tbuf *t, size_t n, uint64_t now)
{
	if (t->len + n > ITT_BUF) {
		pthread_mutex_lock(&t->mu);
		flush(t, now, 1);
		pthread_mutex_unlock(&t->mu);
	}
}

/*
 * name_key writes the NAME record of key (a string handle, or a domain's
 * address + 1 for its frames) unless this thread has written it.
 */
static void name_key(struct tbuf *t, const void *key, const char *s, uint64_t now)
{
	unsigned char body[8 + STAX_ITT_MAX_NAME];
	uint64_t k = (uint64_t)(uintptr_t)key;
	size_t slot = (size_t)((k >> 3) * 0x9E3779B97F4A7C15ull >> 56) % ITT_NAMES;
	size_t n;

	if (t->named[slot] == key && key)
		return;
	if (!s)
		s = "(unnamed)";
	n = strnlen(s, STAX_ITT_MAX_NAME);
	room(t, 8 + 8 + n + 7, now);
	memcpy(body, &k, 8);
	memcpy(body + 8, s, n);
	put(t, STAX_ITT_NAME, body, 8 + n);
	t->named[slot] = key;
}

static const char *handle_name(const stax_itt_string_handle *h) { return h ? h->strA : NULL; }

/*
 * record appends a TASK or MARK record of key (named s) to t's buffer, after
 * the key's NAME if this thread has not written it, and writes the buffer
 * when it is full or ITT_FLUSH_NS old; the caller is t's thread and does
 * not hold t->mu.
 */
static void record(struct tbuf *t, uint16_t type, const void *key, const char *s, const void *body, size_t n, uint64_t now)
{
	name_key(t, key, s, now);
	room(t, 8 + n, now);
	put(t, type, body, n);
	if (now - t->last_write > ITT_FLUSH_NS) {
		pthread_mutex_lock(&t->mu);
		flush(t, now, 1);
		pthread_mutex_unlock(&t->mu);
	}
}

/* close_open writes t's open tasks as ending now, marked unfinished; the caller is t's
 * thread (the only one that changes its stack) and does not hold t->mu. */
static void close_open(struct tbuf *t, uint64_t now)
{
	while (t->depth > 0) {
		uint64_t body[4];
		const stax_itt_string_handle *name;
		int d = t->depth - 1;

		name = t->stack[d].name;
		body[0] = (uint64_t)(uintptr_t)name;
		body[1] = t->stack[d].start;
		body[2] = now;
		body[3] = (uint64_t)d | (uint64_t)STAX_ITT_TASK_UNFINISHED << 32;
		name_key(t, name, handle_name(name), now);
		room(t, sizeof body + 8, now);
		put(t, STAX_ITT_TASK, body, sizeof body);
		__atomic_store_n(&t->depth, d, __ATOMIC_RELAXED);
	}
}

static void thread_gone(void *p)
{
	struct tbuf *t = p, **pp;

	pthread_mutex_lock(&list_mu);
	for (pp = &threads; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	pthread_mutex_unlock(&list_mu);
	close_open(t, now_ns());
	pthread_mutex_lock(&t->mu);
	count_drop(t, t->over);
	flush(t, now_ns(), 1);
	pthread_mutex_unlock(&t->mu);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

/* self is the calling thread's buffer (the key's value: no __thread in a library that
 * is loaded with dlopen). */
static struct tbuf *self(void) { return pthread_getspecific(key); }

static struct tbuf *me(void)
{
	struct tbuf *t = self();

	if (t)
		return t;
	t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	pthread_mutex_init(&t->mu, NULL);
	t->tid = (uint32_t)syscall(SYS_gettid);
	t->last_write = now_ns();
	pthread_mutex_lock(&list_mu);
	t->next = threads;
	threads = t;
	pthread_mutex_unlock(&list_mu);
	pthread_setspecific(key, t);
	return t;
}

/* ---- the API entries ---- */

static void task_begin(const stax_itt_domain *d, stax_itt_id id, stax_itt_id parent, stax_itt_string_handle *name)
{
	struct tbuf *t = me();

	(void)d;
	(void)id;
	(void)parent;
	if (!t)
		return;
	if (t->depth >= STAX_ITT_MAX_DEPTH || t->over > 0) {
		t->over++;
		return;
	}
	t->stack[t->depth].name = name;
	t->stack[t->depth].start = now_ns();
	__atomic_store_n(&t->depth, t->depth + 1, __ATOMIC_RELEASE);
}

static void task_end(const stax_itt_domain *d)
{
	struct tbuf *t = self();
	uint64_t body[4], now;
	const stax_itt_string_handle *name;

	(void)d;
	if (!t) {
		t = me();
		if (t) {
			pthread_mutex_lock(&t->mu);
			t->unmatched++; /* an end before any begin of this thread */
			pthread_mutex_unlock(&t->mu);
		}
		return;
	}
	if (t->over > 0) {
		t->over--;
		pthread_mutex_lock(&t->mu);
		count_drop(t, 1);
		pthread_mutex_unlock(&t->mu);
		return;
	}
	if (t->depth == 0) {
		pthread_mutex_lock(&t->mu);
		t->unmatched++; /* an end without a begin */
		pthread_mutex_unlock(&t->mu);
		return;
	}
	now = now_ns();
	__atomic_store_n(&t->depth, t->depth - 1, __ATOMIC_RELAXED);
	name = t->stack[t->depth].name;
	body[0] = (uint64_t)(uintptr_t)name;
	body[1] = t->stack[t->depth].start;
	body[2] = now;
	body[3] = (uint64_t)t->depth;
	record(t, STAX_ITT_TASK, name, handle_name(name), body, sizeof body, now);
}

static void marker(const stax_itt_domain *d, stax_itt_id id, stax_itt_string_handle *name, int scope)
{
	struct tbuf *t = me();
	uint64_t body[2], now = now_ns();

	(void)d;
	(void)id;
	(void)scope;
	if (!t)
		return;
	body[0] = (uint64_t)(uintptr_t)name;
	body[1] = now;
	record(t, STAX_ITT_MARK, name, handle_name(name), body, sizeof body, now);
}

/*
 * Frames (__itt_frame_begin_v3/end_v3) are spans named after their domain,
 * one open per domain and thread; a begin while one is open starts it again.
 */
static void frame_begin(const stax_itt_domain *d, stax_itt_id *id)
{
	struct tbuf *t = me();
	int i;

	(void)id;
	if (!t || !d)
		return;
	for (i = 0; i < t->nframes && t->frames[i].domain != d; i++)
		;
	if (i == ITT_FRAMES) {
		pthread_mutex_lock(&t->mu);
		count_drop(t, 1);
		pthread_mutex_unlock(&t->mu);
		return;
	}
	t->frames[i].domain = d;
	t->frames[i].start = now_ns();
	if (i == t->nframes)
		t->nframes++;
}

static void frame_end(const stax_itt_domain *d, stax_itt_id *id)
{
	struct tbuf *t = me();
	uint64_t body[4], now;
	const char *key;
	int i;

	(void)id;
	if (!t || !d)
		return;
	for (i = 0; i < t->nframes && t->frames[i].domain != d; i++)
		;
	if (i == t->nframes) {
		pthread_mutex_lock(&t->mu);
		t->unmatched++; /* an end without a begin */
		pthread_mutex_unlock(&t->mu);
		return;
	}
	now = now_ns();
	key = (const char *)d + 1;
	body[0] = (uint64_t)(uintptr_t)key;
	body[1] = t->frames[i].start;
	body[2] = now;
	body[3] = 0;
	t->frames[i] = t->frames[--t->nframes];
	record(t, STAX_ITT_TASK, key, d->nameA, body, sizeof body, now);
}

/* ---- setup ---- */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&list_mu);
	pthread_mutex_lock(&file_mu);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&file_mu);
	pthread_mutex_unlock(&list_mu);
}

/* The child keeps only its own thread, without the parent's records. */
static void atfork_child(void)
{
	struct tbuf *t = self();

	threads = NULL;
	dropped_total = 0;
	failed_writes = last_errno = 0;
	warned = 0;
	if (t) {
		t->len = 0;
		t->done = 0;
		t->dropped = 0;
		t->unmatched = t->unfinished = 0;
		memset(t->named, 0, sizeof t->named);
		t->tid = (uint32_t)syscall(SYS_gettid);
		t->next = NULL;
		threads = t;
		pthread_mutex_init(&t->mu, NULL);
	}
	pthread_mutex_unlock(&file_mu);
	pthread_mutex_unlock(&list_mu);
}

static void init(void)
{
	const char *on = getenv(STAX_ENV_COLLECT);
	const char *d = getenv(STAX_ENV_DIR);
	const char *mb = getenv(STAX_ENV_ITT_MAX_MB);
	unsigned long lim = ITT_MAX_MB_DEFAULT;

	if (!on || strcmp(on, "1") != 0)
		return;
	if (mb && *mb && *mb != '-') {
		char *end;
		unsigned long v = strtoul(mb, &end, 10);

		if (*end == 0 && v > 0 && v <= (1ul << 20))
			lim = v;
	}
	max_bytes = (uint64_t)lim << 20;
	dir = strdup(d && *d ? d : STAX_DEFAULT_DIR);
	if (!dir || pthread_key_create(&key, thread_gone) != 0)
		return;
	if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0)
		return;
	__atomic_store_n(&enabled, 1, __ATOMIC_RELEASE);
}

/* At exit (and dlclose) every thread's buffer is written. */
__attribute__((destructor)) static void itt_fini(void)
{
	struct tbuf *t;
	uint64_t now = now_ns();

	if (!__atomic_load_n(&enabled, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&list_mu);
	for (t = threads; t; t = t->next) {
		int own = t == self();

		if (own)
			close_open(t, now);
		pthread_mutex_lock(&t->mu);
		if (!own)
			t->unfinished += (uint64_t)__atomic_load_n(&t->depth, __ATOMIC_ACQUIRE);
		flush(t, now, own);
		pthread_mutex_unlock(&t->mu);
	}
	pthread_mutex_lock(&file_mu);
	if (file_pid == (int)getpid())
		update_header(); /* drops counted on threads that had nothing else to write */
	pthread_mutex_unlock(&file_mu);
	pthread_mutex_unlock(&list_mu);
}

static void thread_set_name(const char *name)
{
	char comm[16];

	if (!name)
		return;
	strncpy(comm, name, sizeof comm - 1);
	comm[sizeof comm - 1] = 0;
	prctl(PR_SET_NAME, comm, 0, 0, 0);
}

static const struct {
	const char *name;
	void *fn;
} entries[] = {
	{ "__itt_task_begin", (void *)task_begin },
	{ "__itt_task_end", (void *)task_end },
	{ "__itt_marker", (void *)marker },
	{ "__itt_frame_begin_v3", (void *)frame_begin },
	{ "__itt_frame_end_v3", (void *)frame_end },
	{ "__itt_thread_set_name", (void *)thread_set_name },
};

/*
 * __itt_api_init fills the entries of g's API list this collector
 * implements, once g is an ITT global of version 3.
 */
STAX_EXPORT void __itt_api_init(stax_itt_global *g, int groups)
{
	static const unsigned char magic[8] = STAX_ITT_MAGIC;
	stax_itt_api_info *a;
	size_t i;

	(void)groups;
	pthread_once(&once, init);
	if (!__atomic_load_n(&enabled, __ATOMIC_ACQUIRE) || !g || memcmp(g->magic, magic, 8) != 0 || g->version_major != 3 ||
	    !g->api_list_ptr)
		return;
	for (a = g->api_list_ptr; a->name; a++) {
		for (i = 0; i < sizeof entries / sizeof entries[0]; i++) {
			if (strcmp(a->name, entries[i].name) == 0 && a->func_ptr)
				*a->func_ptr = entries[i].fn;
		}
	}
}

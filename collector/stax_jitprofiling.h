/*
 * stax_jitprofiling.h - binary interface of the JIT Profiling API as seen by
 * a collector library: the event numbers and the event structures a JIT
 * passes to NotifyEvent.
 *
 * The layouts follow the x86-64 (LP64) ABI of the public JIT Profiling API
 * (ittapi's jitprofiling.h, packed to 8 like the original).  The names are
 * stax's own; the static assertions below pin every size and offset so a
 * mistake here fails the build instead of misreading a JIT's events.
 */
#ifndef STAX_JITPROFILING_H
#define STAX_JITPROFILING_H

#include <stddef.h>
#include <stdint.h>

/* Event numbers (the first argument of NotifyEvent). */
enum stax_jit_event {
	STAX_JIT_EV_SHUTDOWN = 2,               /* no data */
	STAX_JIT_EV_METHOD_LOAD_FINISHED = 13,  /* struct stax_jit_method_load */
	STAX_JIT_EV_METHOD_UNLOAD_START = 14,   /* struct stax_jit_method_id (or any
	                                         * structure starting with the id) */
	STAX_JIT_EV_METHOD_UPDATE = 15,         /* struct stax_jit_method_load */
	STAX_JIT_EV_METHOD_INLINE_LOAD_FINISHED = 16, /* struct stax_jit_inline_load */
	STAX_JIT_EV_METHOD_UPDATE_V2 = 17,      /* struct stax_jit_method_update */
	STAX_JIT_EV_METHOD_LOAD_FINISHED_V2 = 21, /* struct stax_jit_method_load_v2 */
	STAX_JIT_EV_METHOD_LOAD_FINISHED_V3 = 22, /* struct stax_jit_method_load_v3 */
};

/* Return values of Initialize. */
enum {
	STAX_JIT_NOTHING_RUNNING = 0,
	STAX_JIT_SAMPLING_ON = 1,
};

/* Code architecture of a V3 load. */
enum stax_jit_arch {
	STAX_JIT_ARCH_NATIVE = 0,
	STAX_JIT_ARCH_32 = 1,
	STAX_JIT_ARCH_64 = 2,
};

/* Segment type of a METHOD_UPDATE_V2 event. */
enum stax_jit_segment {
	STAX_JIT_SEG_UNKNOWN = 0,
	STAX_JIT_SEG_CODE = 1,
	STAX_JIT_SEG_DATA = 2,
	STAX_JIT_SEG_KEEP = 3,
};

#pragma pack(push, 8)

/* One line table entry: code offset from the start of the region -> line. */
struct stax_jit_line {
	uint32_t offset;
	uint32_t line;
};

struct stax_jit_method_id {
	uint32_t method_id;
};

struct stax_jit_method_load {
	uint32_t method_id;
	char *method_name;
	void *load_address;
	uint32_t size;
	uint32_t line_count;
	struct stax_jit_line *lines;
	uint32_t class_id;               /* obsolete, ignored */
	char *class_name;
	char *source_file;
};

struct stax_jit_method_load_v2 {
	uint32_t method_id;
	char *method_name;
	void *load_address;
	uint32_t size;
	uint32_t line_count;
	struct stax_jit_line *lines;
	char *class_name;
	char *source_file;
	char *module_name;
};

struct stax_jit_method_load_v3 {
	uint32_t method_id;
	char *method_name;
	void *load_address;
	uint32_t size;
	uint32_t line_count;
	struct stax_jit_line *lines;
	char *class_name;
	char *source_file;
	char *module_name;
	enum stax_jit_arch arch;
};

struct stax_jit_inline_load {
	uint32_t method_id;
	uint32_t parent_method_id;
	char *method_name;
	void *load_address;
	uint32_t size;
	uint32_t line_count;
	struct stax_jit_line *lines;
	char *class_name;
	char *source_file;
};

struct stax_jit_method_update {
	void *load_address;
	uint32_t size;
	enum stax_jit_segment type;
	const char *data_format;
};

#pragma pack(pop)

#if defined(__x86_64__) && defined(__LP64__)
#define STAX_JIT_OFF(t, f, o) _Static_assert(offsetof(struct t, f) == (o), #t "." #f)
#define STAX_JIT_SIZE(t, s) _Static_assert(sizeof(struct t) == (s), "sizeof " #t)
STAX_JIT_SIZE(stax_jit_line, 8);
STAX_JIT_OFF(stax_jit_line, line, 4);
STAX_JIT_SIZE(stax_jit_method_id, 4);

STAX_JIT_SIZE(stax_jit_method_load, 64);
STAX_JIT_OFF(stax_jit_method_load, method_name, 8);
STAX_JIT_OFF(stax_jit_method_load, load_address, 16);
STAX_JIT_OFF(stax_jit_method_load, size, 24);
STAX_JIT_OFF(stax_jit_method_load, line_count, 28);
STAX_JIT_OFF(stax_jit_method_load, lines, 32);
STAX_JIT_OFF(stax_jit_method_load, class_id, 40);
STAX_JIT_OFF(stax_jit_method_load, class_name, 48);
STAX_JIT_OFF(stax_jit_method_load, source_file, 56);

STAX_JIT_SIZE(stax_jit_method_load_v2, 64);
STAX_JIT_OFF(stax_jit_method_load_v2, method_name, 8);
STAX_JIT_OFF(stax_jit_method_load_v2, load_address, 16);
STAX_JIT_OFF(stax_jit_method_load_v2, size, 24);
STAX_JIT_OFF(stax_jit_method_load_v2, line_count, 28);
STAX_JIT_OFF(stax_jit_method_load_v2, lines, 32);
STAX_JIT_OFF(stax_jit_method_load_v2, class_name, 40);
STAX_JIT_OFF(stax_jit_method_load_v2, source_file, 48);
STAX_JIT_OFF(stax_jit_method_load_v2, module_name, 56);

STAX_JIT_SIZE(stax_jit_method_load_v3, 72);
STAX_JIT_OFF(stax_jit_method_load_v3, method_name, 8);
STAX_JIT_OFF(stax_jit_method_load_v3, load_address, 16);
STAX_JIT_OFF(stax_jit_method_load_v3, size, 24);
STAX_JIT_OFF(stax_jit_method_load_v3, line_count, 28);
STAX_JIT_OFF(stax_jit_method_load_v3, lines, 32);
STAX_JIT_OFF(stax_jit_method_load_v3, class_name, 40);
STAX_JIT_OFF(stax_jit_method_load_v3, source_file, 48);
STAX_JIT_OFF(stax_jit_method_load_v3, module_name, 56);
STAX_JIT_OFF(stax_jit_method_load_v3, arch, 64);

STAX_JIT_SIZE(stax_jit_inline_load, 56);
STAX_JIT_OFF(stax_jit_inline_load, parent_method_id, 4);
STAX_JIT_OFF(stax_jit_inline_load, method_name, 8);
STAX_JIT_OFF(stax_jit_inline_load, load_address, 16);
STAX_JIT_OFF(stax_jit_inline_load, size, 24);
STAX_JIT_OFF(stax_jit_inline_load, line_count, 28);
STAX_JIT_OFF(stax_jit_inline_load, lines, 32);
STAX_JIT_OFF(stax_jit_inline_load, class_name, 40);
STAX_JIT_OFF(stax_jit_inline_load, source_file, 48);

STAX_JIT_SIZE(stax_jit_method_update, 24);
STAX_JIT_OFF(stax_jit_method_update, size, 8);
STAX_JIT_OFF(stax_jit_method_update, type, 12);
STAX_JIT_OFF(stax_jit_method_update, data_format, 16);
_Static_assert(sizeof(enum stax_jit_arch) == 4, "enum size");
#undef STAX_JIT_OFF
#undef STAX_JIT_SIZE
#endif

#endif /* STAX_JITPROFILING_H */

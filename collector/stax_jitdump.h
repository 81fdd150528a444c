/*
 * stax_jitdump.h - the jitdump file format as the collector writes it: the
 * record ids (perf's, and stax's extensions 100-102 described in
 * docs/jitdump-extensions.md), the header, the record prefix and the fixed
 * part of each record, in the host's byte order.
 *
 * stax's Go definition of the format (internal/jit/jitformat) is the
 * reference: a test of internal/ittcollector compiles this header and
 * compares every constant, size and field offset with it.  Each structure
 * holds its fields in file order without padding.
 */
#ifndef STAX_JITDUMP_H
#define STAX_JITDUMP_H

#include <elf.h>
#include <stdint.h>

#define STAX_JITDUMP_MAGIC 0x4A695444u
#define STAX_JITDUMP_VERSION 1u
#define STAX_JITDUMP_FLAG_ARCH_TIMESTAMP 1u

enum stax_jitdump_record {
	STAX_JITDUMP_CODE_LOAD = 0,
	STAX_JITDUMP_CODE_MOVE = 1,
	STAX_JITDUMP_CODE_DEBUG_INFO = 2,
	STAX_JITDUMP_CODE_CLOSE = 3,
	STAX_JITDUMP_CODE_UNWINDING_INFO = 4,
	STAX_JITDUMP_STAX_METHOD_ID = 100,
	STAX_JITDUMP_STAX_INLINE = 101,
	STAX_JITDUMP_STAX_CODE_UNLOAD = 102,
};

/* The ELF e_machine of the code this process runs, for the header. */
#if defined(__x86_64__)
#define STAX_JITDUMP_ELF_MACH EM_X86_64
#elif defined(__i386__)
#define STAX_JITDUMP_ELF_MACH EM_386
#elif defined(__aarch64__)
#define STAX_JITDUMP_ELF_MACH EM_AARCH64
#elif defined(__arm__)
#define STAX_JITDUMP_ELF_MACH EM_ARM
#elif defined(__powerpc64__) || defined(__powerpc__)
#define STAX_JITDUMP_ELF_MACH (sizeof(void *) == 8 ? EM_PPC64 : EM_PPC)
#elif defined(__s390x__)
#define STAX_JITDUMP_ELF_MACH EM_S390
#elif defined(__riscv)
#define STAX_JITDUMP_ELF_MACH EM_RISCV
#elif defined(__loongarch__)
#define STAX_JITDUMP_ELF_MACH 258 /* EM_LOONGARCH */
#elif defined(__mips__)
#define STAX_JITDUMP_ELF_MACH EM_MIPS
#else
#error "unknown architecture: add its ELF e_machine"
#endif

/* The file header; total_size is the header's size. */
struct stax_jitdump_header {
	uint32_t magic;
	uint32_t version;
	uint32_t total_size;
	uint32_t elf_mach;
	uint32_t pad1;
	uint32_t pid;
	uint64_t timestamp;
	uint64_t flags;
};

/*
 * stax's header extension, right after the header (whose total_size counts
 * it; perf skips it): what the collector could not write, updated in place.
 * functions: CODE_LOAD records not written (a write failed and the file was
 * given up); failed_writes: writes that failed; error: the errno of the last.
 */
#define STAX_JITDUMP_LOST_MAGIC 0x4C585453u /* "STXL" */
struct stax_jitdump_lost {
	uint32_t magic;
	uint32_t size;
	uint64_t functions;
	uint32_t failed_writes;
	uint32_t error;
};

/* Starts every record; total_size counts the prefix. */
struct stax_jitdump_record_prefix {
	uint32_t id;
	uint32_t total_size;
	uint64_t timestamp;
};

/* CODE_LOAD; the NUL-terminated name and code_size bytes of code follow. */
struct stax_jitdump_code_load {
	uint32_t pid;
	uint32_t tid;
	uint64_t vma;
	uint64_t code_addr;
	uint64_t code_size;
	uint64_t code_index;
};

/* CODE_MOVE. */
struct stax_jitdump_code_move {
	uint32_t pid;
	uint32_t tid;
	uint64_t vma;
	uint64_t old_code_addr;
	uint64_t new_code_addr;
	uint64_t code_size;
	uint64_t code_index;
};

/* CODE_DEBUG_INFO; nr_entry entries follow. */
struct stax_jitdump_debug_info {
	uint64_t code_addr;
	uint64_t nr_entry;
};

/* Each entry of CODE_DEBUG_INFO; the NUL-terminated file name follows. */
struct stax_jitdump_debug_entry {
	uint64_t addr;
	uint32_t line;
	uint32_t discrim;
};

/* CODE_UNWINDING_INFO; unwinding_size bytes follow, padded to 8. */
struct stax_jitdump_unwinding_info {
	uint64_t unwinding_size;
	uint64_t eh_frame_hdr_size;
	uint64_t mapped_size;
};

/* Record 100: the method id of the code at code_addr. */
struct stax_jitdump_stax_method_id {
	uint64_t code_addr;
	uint64_t code_size;
	uint32_t method_id;
	uint32_t pad;
};

/* Record 101, an inlined range; the NUL-terminated name and source file follow. */
struct stax_jitdump_stax_inline {
	uint32_t method_id;
	uint32_t parent_method_id;
	uint64_t start;
	uint64_t size;
};

/* Record 102: the code at code_addr is gone. */
struct stax_jitdump_stax_code_unload {
	uint64_t code_addr;
	uint64_t code_size;
};

#endif /* STAX_JITDUMP_H */

// A tiny JIT in C for the JIT-naming tests. Modes:
//   reuse MS    writes /tmp/jit-<pid>.dump (never mmapped: found by its path alone), loads
//               reuse_alpha at address X and runs it for MS milliseconds of CPU time, then
//               frees X, loads reuse_beta at the same address X and runs it for 2*MS.
//   mapexit MS  runs mapped_gamma for MS milliseconds of CPU time with no announcement at
//               all, then writes /tmp/perf-<pid>.map at exit, as the JVM's
//               DumpPerfMapAtExit does.
//   frameless MS  runs frameless_delta, a loop with no prologue (it never touches rbp or
//               rsp), for MS milliseconds of CPU time, called by run_frameless.
//   unwind MS   the same, with CODE_UNWINDING_INFO (an .eh_frame saying so) before its load.
//   unwind-memfd, unwind-devzero, unwind-shm MS  the same, with the code in a shared
//               mapping of a memfd, of /dev/zero or of System V shared memory (as JITs that
//               map their code twice, writable and executable, keep it).
//   devzero MS  runs zero_epsilon for MS milliseconds of CPU time from a shared mapping of
//               /dev/zero (as PHP's opcache JIT keeps its buffer), announced in a perf map.
//   pageshare MS  runs share_alpha (unannounced) at the start of a page for MS, then writes
//               share_beta, other code, into the same page and runs it for 2*MS; it prints
//               "ready", and when a line arrives on its standard input writes the perf map
//               naming both and exits, as the JVM's DumpPerfMapAtExit does.
//   mapfree MS  runs freed_delta (unannounced) for MS and prints "ready"; at a line on its
//               standard input it overwrites the code with int3 bytes (freed memory) and
//               only then writes its perf map line; it exits at the next line.
//   mapreuse MS announces map_alpha at address X in a perf map and runs it for MS, then
//               puts map_beta at X, appends its line and runs it for 2*MS; 20 ms of CPU in
//               guard() around the switch keep the two apart by more than a clock tick.
// Built by the tests with: gcc -O1 -fno-omit-frame-pointer
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>
#include "cpubudget.h"

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int dump_fd = -1;
static uint64_t code_index;

static void put(unsigned char **p, const void *v, size_t n) {
	memcpy(*p, v, n);
	*p += n;
}

static void dump_open(void) {
	char path[64];
	snprintf(path, sizeof path, "/tmp/jit-%d.dump", getpid());
	dump_fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (dump_fd < 0) {
		perror("open dump");
		exit(1);
	}
	unsigned char h[40], *p = h;
	uint32_t magic = 0x4A695444, version = 1, size = 40, mach = 62, pad = 0, pid = getpid();
	uint64_t ts = now_ns(), flags = 0;
	put(&p, &magic, 4); put(&p, &version, 4); put(&p, &size, 4); put(&p, &mach, 4);
	put(&p, &pad, 4); put(&p, &pid, 4); put(&p, &ts, 8); put(&p, &flags, 8);
	if (write(dump_fd, h, sizeof h) != sizeof h) exit(1);
}

static void dump_load(const char *name, void *addr, size_t len) {
	size_t nlen = strlen(name) + 1;
	uint32_t total = 16 + 40 + nlen + len;
	unsigned char *r = malloc(total), *p = r;
	uint32_t id = 0, pid = getpid(), tid = gettid();
	uint64_t ts = now_ns(), a = (uintptr_t)addr, sz = len, idx = ++code_index;
	put(&p, &id, 4); put(&p, &total, 4); put(&p, &ts, 8);
	put(&p, &pid, 4); put(&p, &tid, 4); put(&p, &a, 8); put(&p, &a, 8); put(&p, &sz, 8); put(&p, &idx, 8);
	put(&p, name, nlen);
	put(&p, addr, len);
	if (write(dump_fd, r, total) != (ssize_t)total) exit(1);
	free(r);
}

// emit writes a counting loop: push rbp; mov rbp,rsp; movabs rcx,N; xor eax,eax;
// 1: add rax,STEP; cmp rax,rcx; jne 1b; pop rbp; ret.
static size_t emit(unsigned char *c, uint64_t n, unsigned char step) {
	unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0, 0x31, 0xc0,
	                        0x48, 0x83, 0xc0, step, 0x48, 0x39, 0xc8, 0x75, 0xf7, 0x5d, 0xc3};
	memcpy(code + 6, &n, 8);
	memcpy(c, code, sizeof code);
	return sizeof code;
}

// emit_frameless writes the same loop with no prologue: movabs rcx,N; xor eax,eax;
// 1: add rax,1; cmp rax,rcx; jne 1b; ret. Its return address stays at [rsp].
static size_t emit_frameless(unsigned char *c, uint64_t n) {
	unsigned char code[] = {0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0, 0x31, 0xc0,
	                        0x48, 0x83, 0xc0, 1, 0x48, 0x39, 0xc8, 0x75, 0xf7, 0xc3};
	memcpy(code + 2, &n, 8);
	memcpy(c, code, sizeof code);
	return sizeof code;
}

// dump_frameless_unwind writes CODE_UNWINDING_INFO for a frameless function of len bytes at
// addr: an .eh_frame (absolute addresses) whose one rule is CFA = rsp+8, return address at
// CFA-8, then an .eh_frame_hdr with no search table.
static void dump_frameless_unwind(void *addr, size_t len) {
	unsigned char eh[64] = {0}, *p = eh;
	uint32_t cie_len = 20, fde_len = 28, zero = 0;
	unsigned char cie[] = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x00, 0x0c, 7, 8, 0x90, 1, 0, 0};
	put(&p, &cie_len, 4); put(&p, cie, sizeof cie);
	uint32_t cie_ptr = (uint32_t)(p - eh) + 4;
	uint64_t a = (uintptr_t)addr, sz = len;
	unsigned char aug[8] = {0};
	put(&p, &fde_len, 4); put(&p, &cie_ptr, 4); put(&p, &a, 8); put(&p, &sz, 8); put(&p, aug, 8);
	put(&p, &zero, 4);
	size_t eh_len = p - eh;
	unsigned char hdr[8] = {1, 0x1b, 0xff, 0xff};
	int32_t back = -(int32_t)(eh_len + 4);
	memcpy(hdr + 4, &back, 4);
	uint64_t size = eh_len + sizeof hdr, hdr_size = sizeof hdr;
	uint32_t id = 4, total = 16 + 24 + size;
	uint64_t ts = now_ns();
	unsigned char r[256], *q = r;
	put(&q, &id, 4); put(&q, &total, 4); put(&q, &ts, 8);
	put(&q, &size, 8); put(&q, &hdr_size, 8); put(&q, &size, 8);
	put(&q, eh, eh_len); put(&q, hdr, sizeof hdr);
	if (write(dump_fd, r, total) != (ssize_t)total) exit(1);
}

typedef uint64_t (*fn)(void);

// run calls the generated loop (CPU_CHUNK iterations a call) until ms of CPU time are spent.
static uint64_t run(unsigned char *code, double ms) {
	uint64_t sum = 0;
	double end = thread_cpu_ms() + ms;
	do sum += ((fn)code)(); while (thread_cpu_ms() < end);
	return sum;
}

// run_frameless is the JIT code's caller: a frame-pointer walk skips it (the leaf kept
// rbp), the .eh_frame or the return address at [rsp] find it.
__attribute__((noinline)) static uint64_t run_frameless(unsigned char *code, double ms) {
	uint64_t sum = run(code, ms);
	__asm__ volatile("" ::: "memory");
	return sum;
}

static FILE *perf_map(void) {
	char path[64];
	snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
	FILE *f = fopen(path, "w");
	if (!f) {
		perror("perf map");
		exit(1);
	}
	return f;
}

// guard spends ms of CPU time outside JIT code.
__attribute__((noinline)) static void guard(double ms) {
	volatile unsigned long s = 0;
	double end = thread_cpu_ms() + ms;
	while (thread_cpu_ms() < end)
		for (unsigned long i = 0; i < 1000; i++) s += i;
}

// ready_then_line prints "ready" and waits for a line on standard input: 0 at its end.
static int ready_then_line(void) {
	char line[8];
	printf("ready\n");
	fflush(stdout);
	return fgets(line, sizeof line, stdin) != 0;
}

// exec_memory returns a page of writable, executable memory of the given kind: anonymous,
// or shared from a memfd, /dev/zero or System V shared memory.
static unsigned char *exec_memory(const char *kind) {
	void *p = MAP_FAILED;
	if (strcmp(kind, "memfd") == 0) {
		int fd = memfd_create("cjit-code", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, 4096) == 0)
			p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, fd, 0);
	} else if (strcmp(kind, "devzero") == 0) {
		int fd = open("/dev/zero", O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, fd, 0);
	} else if (strcmp(kind, "shm") == 0) {
		int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
		if (id >= 0) {
			p = shmat(id, 0, SHM_EXEC);
			shmctl(id, IPC_RMID, 0); // gone once detached
			if (p == (void *)-1) p = MAP_FAILED;
		}
	} else {
		p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (p == MAP_FAILED) {
		perror(kind);
		exit(1);
	}
	return p;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: cjit reuse|mapexit N\n");
		return 2;
	}
	double ms = arg_ms(argc, argv, 2, 300);
	uint64_t n = CPU_CHUNK;
	unsigned char *mem = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	if (strcmp(argv[1], "reuse") == 0) {
		dump_open();
		size_t len = emit(mem, n, 1);
		dump_load("reuse_alpha", mem, len);
		printf("alpha %llu\n", (unsigned long long)run(mem, ms));
		// Free the code and put another function at the same address.
		memset(mem, 0xcc, 64);
		len = emit(mem, n, 1);
		dump_load("reuse_beta", mem, len);
		printf("beta %llu\n", (unsigned long long)run(mem, 2 * ms));
		return 0;
	}
	if (strcmp(argv[1], "frameless") == 0 || strncmp(argv[1], "unwind", 6) == 0) {
		if (argv[1][0] == 'u' && argv[1][6] == '-') mem = exec_memory(argv[1] + 7);
		dump_open();
		size_t len = emit_frameless(mem, n);
		if (argv[1][0] == 'u') dump_frameless_unwind(mem, len);
		dump_load("frameless_delta", mem, len);
		printf("delta %llu\n", (unsigned long long)run_frameless(mem, ms));
		return 0;
	}
	if (strcmp(argv[1], "devzero") == 0) {
		int fd = open("/dev/zero", O_RDWR);
		unsigned char *z = fd < 0 ? MAP_FAILED : mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, fd, 0);
		if (z == MAP_FAILED) {
			perror("mmap /dev/zero");
			return 1;
		}
		size_t len = emit(z, n, 1);
		FILE *f = perf_map();
		fprintf(f, "%lx %zx zero_epsilon\n", (unsigned long)(uintptr_t)z, len);
		fclose(f);
		printf("epsilon %llu\n", (unsigned long long)run(z, ms));
		return 0;
	}
	if (strcmp(argv[1], "mapreuse") == 0) {
		FILE *f = perf_map();
		size_t len = emit(mem, n, 1);
		fprintf(f, "%lx %zx map_alpha\n", (unsigned long)(uintptr_t)mem, len);
		fflush(f);
		printf("alpha %llu\n", (unsigned long long)run(mem, ms));
		guard(20);
		memset(mem, 0xcc, 64);
		len = emit(mem, n, 1);
		fprintf(f, "%lx %zx map_beta\n", (unsigned long)(uintptr_t)mem, len);
		fflush(f);
		guard(20);
		printf("beta %llu\n", (unsigned long long)run(mem, 2 * ms));
		fclose(f);
		return 0;
	}
	if (strcmp(argv[1], "pageshare") == 0) {
		size_t alen = emit(mem, n, 1);
		printf("alpha %llu\n", (unsigned long long)run(mem, ms));
		unsigned char *b = mem + 2048;
		size_t blen = emit(b, n - n % 3, 3);
		printf("beta %llu\n", (unsigned long long)run(b, 2 * ms));
		if (!ready_then_line()) return 1;
		FILE *f = perf_map();
		fprintf(f, "%lx %zx share_alpha\n", (unsigned long)(uintptr_t)mem, alen);
		fprintf(f, "%lx %zx share_beta\n", (unsigned long)(uintptr_t)b, blen);
		fclose(f);
		return 0;
	}
	if (strcmp(argv[1], "mapfree") == 0) {
		size_t len = emit(mem, n, 1);
		printf("delta %llu\n", (unsigned long long)run(mem, ms));
		if (!ready_then_line()) return 1;
		memset(mem, 0xcc, 64);
		FILE *f = perf_map();
		fprintf(f, "%lx %zx freed_delta\n", (unsigned long)(uintptr_t)mem, len);
		fclose(f);
		char line[8];
		return fgets(line, sizeof line, stdin) ? 0 : 1;
	}
	if (strcmp(argv[1], "mapexit") == 0) {
		size_t len = emit(mem, n, 1);
		printf("gamma %llu\n", (unsigned long long)run(mem, ms));
		char path[64];
		snprintf(path, sizeof path, "/tmp/perf-%d.map", getpid());
		FILE *f = fopen(path, "w");
		if (!f) return 1;
		fprintf(f, "%lx %zx mapped_gamma\n", (unsigned long)(uintptr_t)mem, len);
		fclose(f);
		return 0;
	}
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}

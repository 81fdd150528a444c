// A tiny JIT that compiles one function, ver_fn, three times, for the annotate tests:
// version 1 at address X runs for MS milliseconds of CPU time, version 2 (other code) at
// address Y for 2*MS, then X is freed and version 3 is loaded there and runs for 3*MS. It
// announces each load in /tmp/jit-<pid>.dump (never mmapped: found by its path).
// Built by the tests with: gcc -O1 -fno-omit-frame-pointer
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

// emit writes a counting loop of `pad` leading nops (so versions differ in size):
// push rbp; mov rbp,rsp; nop*pad; movabs rcx,N; xor eax,eax; 1: add rax,1; cmp rax,rcx;
// jne 1b; pop rbp; ret.
static size_t emit(unsigned char *c, uint64_t n, int pad) {
	unsigned char head[] = {0x55, 0x48, 0x89, 0xe5};
	unsigned char tail[] = {0x48, 0xb9, 0, 0, 0, 0, 0, 0, 0, 0, 0x31, 0xc0,
	                        0x48, 0x83, 0xc0, 1, 0x48, 0x39, 0xc8, 0x75, 0xf7, 0x5d, 0xc3};
	memcpy(tail + 2, &n, 8);
	memcpy(c, head, sizeof head);
	memset(c + sizeof head, 0x90, pad);
	memcpy(c + sizeof head + pad, tail, sizeof tail);
	return sizeof head + pad + sizeof tail;
}

typedef uint64_t (*fn)(void);

// run calls the generated loop (CPU_CHUNK iterations a call) until ms of CPU time are spent.
static uint64_t run(unsigned char *code, double ms) {
	uint64_t sum = 0;
	double end = thread_cpu_ms() + ms;
	do sum += ((fn)code)(); while (thread_cpu_ms() < end);
	return sum;
}

int main(int argc, char **argv) {
	double ms = arg_ms(argc, argv, 1, 300);
	unsigned char *mem = mmap(0, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	unsigned char *x = mem, *y = mem + 4096;
	dump_open();
	size_t len = emit(x, CPU_CHUNK, 0);
	dump_load("ver_fn", x, len);
	printf("v1 %llu\n", (unsigned long long)run(x, ms));
	len = emit(y, CPU_CHUNK, 4);
	dump_load("ver_fn", y, len);
	printf("v2 %llu\n", (unsigned long long)run(y, 2 * ms));
	memset(x, 0xcc, 64); // x is freed, and reused for version 3
	len = emit(x, CPU_CHUNK, 8);
	dump_load("ver_fn", x, len);
	printf("v3 %llu\n", (unsigned long long)run(x, 3 * ms));
	return 0;
}

/*
 * ittjit.c - a tiny JIT for testing stax's JIT Profiling API collector.
 *
 * Usage: ittjit [ITERATIONS|MSms [fork]] (MSms: alpha runs for MS milliseconds of CPU time
 * and every other function for as many calls)
 *
 * It writes x86-64 code into anonymous memory (written while writable,
 * executed read+exec only), reports it through the JIT Profiling API and
 * runs it.  Every busy loop runs ITERATIONS times (default 100000000):
 *
 *   alpha    METHOD_LOAD_FINISHED, line table, source ittjit.js
 *   beta     METHOD_LOAD_FINISHED_V2, line table, source ittjit.js
 *   gamma    split into two regions with one method id; the second region
 *            is reported without a name and without a source file
 *   delta    one loop of its own, delta_inl1 inlined in it (two loops) and
 *            delta_inl2 inlined in delta_inl1 (one loop between them)
 *   epsilon  runs, is unloaded (METHOD_UNLOAD_START), then
 *   zeta     is written at epsilon's address (METHOD_LOAD_FINISHED_V3)
 *
 * With "fork", a child process then reports and runs "child" and runs
 * alpha again.  SHUTDOWN is sent at the end.
 *
 * Standard output has one line per event and phase:
 *   load name=N id=I addr=0xA size=S code=HEX
 *   inline name=N id=I parent=P addr=0xA size=S
 *   unload name=N id=I
 *   run N
 *   fork pid=P
 *   pid=P                (this process, after "initialize R")
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ittstub.h"

#define SOURCE "ittjit.js"

static uint64_t iterations = 100000000;
static size_t pagesz;

/* ---- a minimal code emitter ---- */

struct emit {
	unsigned char *base;
	size_t len;
};

static void byte(struct emit *e, unsigned char b)
{
	e->base[e->len++] = b;
}

static void imm64(struct emit *e, uint64_t v)
{
	memcpy(e->base + e->len, &v, 8);
	e->len += 8;
}

static void prologue(struct emit *e)
{
	byte(e, 0x55);                                  /* push rbp */
	byte(e, 0x48); byte(e, 0x89); byte(e, 0xe5);    /* mov rbp, rsp */
}

static void epilogue(struct emit *e)
{
	byte(e, 0x5d);                                  /* pop rbp */
	byte(e, 0xc3);                                  /* ret */
}

/* mov rcx, n; 1: dec rcx; jnz 1b  (15 bytes) */
static void busy_loop(struct emit *e, uint64_t n)
{
	byte(e, 0x48); byte(e, 0xb9); imm64(e, n ? n : 1);
	byte(e, 0x48); byte(e, 0xff); byte(e, 0xc9);
	byte(e, 0x75); byte(e, 0xfb);
}

/* mov rax, target; jmp rax */
static void jump_abs(struct emit *e, uint64_t target)
{
	byte(e, 0x48); byte(e, 0xb8); imm64(e, target);
	byte(e, 0xff); byte(e, 0xe0);
}

/* ---- code memory ---- */

static unsigned char *code_alloc(size_t pages)
{
	void *p = mmap(NULL, pages * pagesz, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void code_protect(unsigned char *p, size_t pages, int exec)
{
	if (mprotect(p, pages * pagesz, exec ? PROT_READ | PROT_EXEC : PROT_READ | PROT_WRITE) != 0) {
		perror("mprotect");
		exit(1);
	}
}

/* ---- reporting ---- */

static void print_load(const char *name, uint32_t id, const void *addr, size_t size)
{
	const unsigned char *c = addr;
	size_t i;

	printf("load name=%s id=%u addr=%p size=%zu code=", name, id, addr, size);
	for (i = 0; i < size; i++)
		printf("%02x", c[i]);
	printf("\n");
	fflush(stdout);
}

static void load_v1(uint32_t id, char *name, void *addr, size_t size,
		    struct stax_jit_line *lines, uint32_t n, char *src)
{
	struct stax_jit_method_load m;

	memset(&m, 0, sizeof(m));
	m.method_id = id;
	m.method_name = name;
	m.load_address = addr;
	m.size = (uint32_t)size;
	m.line_count = n;
	m.lines = lines;
	m.source_file = src;
	stub_event(STAX_JIT_EV_METHOD_LOAD_FINISHED, &m);
	print_load(name ? name : "", id, addr, size);
}

/* In CPU-time mode (an argument like "300ms"), alpha runs until the thread has used that
 * much CPU time and every other function runs as many times as alpha did, so their shares
 * keep the ratio of their work whatever the machine's speed. */
static double cpu_budget_ms;
static unsigned long calls = 1;

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void run(const char *name, void *fn)
{
	printf("run %s\n", name);
	fflush(stdout);
	if (cpu_budget_ms > 0) {
		double end = thread_cpu_ms() + cpu_budget_ms;

		cpu_budget_ms = 0;
		calls = 0;
		do {
			((void (*)(void))fn)();
			calls++;
		} while (thread_cpu_ms() < end);
		return;
	}
	for (unsigned long i = 0; i < calls; i++)
		((void (*)(void))fn)();
}

int main(int argc, char **argv)
{
	unsigned char *page, *page2, *epage;
	struct emit e;
	int do_fork = argc > 2 && strcmp(argv[2], "fork") == 0;

	if (argc > 1) {
		char *end;

		iterations = strtoull(argv[1], &end, 0);
		if (strcmp(end, "ms") == 0) {
			cpu_budget_ms = (double)iterations;
			iterations = 1 << 20;
		}
	}
	pagesz = (size_t)sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("initialize %u\n", stub_load());
	printf("pid=%d\n", (int)getpid());

	page = code_alloc(1);
	page2 = code_alloc(1);
	epage = code_alloc(1);

	/* alpha at page+0: lines 10..13 */
	unsigned char *alpha = page;
	e = (struct emit){ alpha, 0 };
	prologue(&e);
	busy_loop(&e, iterations);
	epilogue(&e);
	size_t alpha_size = e.len;
	struct stax_jit_line alpha_lines[] = { { 0, 10 }, { 4, 11 }, { 14, 12 }, { 19, 13 } };

	/* beta at page+256: two loops, lines 20..23 */
	unsigned char *beta = page + 256;
	e = (struct emit){ beta, 0 };
	prologue(&e);
	busy_loop(&e, iterations / 2);
	busy_loop(&e, iterations / 2);
	epilogue(&e);
	size_t beta_size = e.len;
	struct stax_jit_line beta_lines[] = { { 0, 20 }, { 4, 21 }, { 19, 22 }, { 34, 23 } };

	/* gamma: region 1 at page+512 jumps to region 2 at page2+0 */
	unsigned char *gamma1 = page + 512, *gamma2 = page2;
	e = (struct emit){ gamma1, 0 };
	prologue(&e);
	busy_loop(&e, iterations);
	jump_abs(&e, (uint64_t)(uintptr_t)gamma2);
	size_t gamma1_size = e.len;
	e = (struct emit){ gamma2, 0 };
	busy_loop(&e, iterations);
	epilogue(&e);
	size_t gamma2_size = e.len;
	struct stax_jit_line gamma1_lines[] = { { 0, 30 }, { 4, 31 }, { 19, 32 } };
	struct stax_jit_line gamma2_lines[] = { { 0, 33 }, { 15, 34 } };

	/* delta at page+1024: own loop, inl1 { loop, inl2 { loop }, loop } */
	unsigned char *delta = page + 1024;
	e = (struct emit){ delta, 0 };
	prologue(&e);
	busy_loop(&e, iterations);              /* delta            4..19 */
	size_t inl1_start = e.len;
	busy_loop(&e, iterations);              /* delta_inl1      19..34 */
	size_t inl2_start = e.len;
	busy_loop(&e, iterations);              /* delta_inl2      34..49 */
	size_t inl2_end = e.len;
	busy_loop(&e, iterations);              /* delta_inl1      49..64 */
	size_t inl1_end = e.len;
	epilogue(&e);
	size_t delta_size = e.len;
	struct stax_jit_line delta_lines[] = { { 0, 40 }, { 4, 41 }, { 19, 42 }, { 34, 43 }, { 49, 44 }, { 64, 45 } };

	/* epsilon at epage+0 */
	unsigned char *epsilon = epage;
	e = (struct emit){ epsilon, 0 };
	prologue(&e);
	busy_loop(&e, iterations);
	epilogue(&e);
	size_t epsilon_size = e.len;

	code_protect(page, 1, 1);
	code_protect(page2, 1, 1);
	code_protect(epage, 1, 1);

	/* alpha */
	load_v1(1, "alpha", alpha, alpha_size, alpha_lines, 4, SOURCE);
	run("alpha", alpha);

	/* beta (V2) */
	struct stax_jit_method_load_v2 b;
	memset(&b, 0, sizeof(b));
	b.method_id = 2;
	b.method_name = "beta";
	b.load_address = beta;
	b.size = (uint32_t)beta_size;
	b.line_count = 4;
	b.lines = beta_lines;
	b.source_file = SOURCE;
	stub_event(STAX_JIT_EV_METHOD_LOAD_FINISHED_V2, &b);
	print_load("beta", 2, beta, beta_size);
	run("beta", beta);

	/* gamma: two regions, one method id */
	load_v1(3, "gamma", gamma1, gamma1_size, gamma1_lines, 3, SOURCE);
	load_v1(3, NULL, gamma2, gamma2_size, gamma2_lines, 2, NULL);
	run("gamma", gamma1);

	/* delta with a two-level inline tree */
	load_v1(4, "delta", delta, delta_size, delta_lines, 6, SOURCE);
	struct stax_jit_inline_load in1, in2;
	memset(&in1, 0, sizeof(in1));
	in1.method_id = 5;
	in1.parent_method_id = 4;
	in1.method_name = "delta_inl1";
	in1.load_address = delta + inl1_start;
	in1.size = (uint32_t)(inl1_end - inl1_start);
	in1.source_file = SOURCE;
	stub_event(STAX_JIT_EV_METHOD_INLINE_LOAD_FINISHED, &in1);
	printf("inline name=delta_inl1 id=5 parent=4 addr=%p size=%u\n", in1.load_address, in1.size);
	in2 = in1;
	in2.method_id = 6;
	in2.parent_method_id = 5;
	in2.method_name = "delta_inl2";
	in2.load_address = delta + inl2_start;
	in2.size = (uint32_t)(inl2_end - inl2_start);
	stub_event(STAX_JIT_EV_METHOD_INLINE_LOAD_FINISHED, &in2);
	printf("inline name=delta_inl2 id=6 parent=5 addr=%p size=%u\n", in2.load_address, in2.size);
	run("delta", delta);

	/* epsilon, unloaded, then zeta at the same address */
	load_v1(7, "epsilon", epsilon, epsilon_size, NULL, 0, SOURCE);
	run("epsilon", epsilon);
	struct stax_jit_method_id mid = { 7 };
	stub_event(STAX_JIT_EV_METHOD_UNLOAD_START, &mid);
	printf("unload name=epsilon id=7\n");

	code_protect(epage, 1, 0);
	memset(epage, 0xcc, pagesz);
	unsigned char *zeta = epage;
	e = (struct emit){ zeta, 0 };
	prologue(&e);
	busy_loop(&e, iterations);
	busy_loop(&e, iterations);
	epilogue(&e);
	size_t zeta_size = e.len;
	code_protect(epage, 1, 1);
	struct stax_jit_method_load_v3 z;
	memset(&z, 0, sizeof(z));
	z.method_id = 8;
	z.method_name = "zeta";
	z.load_address = zeta;
	z.size = (uint32_t)zeta_size;
	z.source_file = SOURCE;
	z.arch = STAX_JIT_ARCH_NATIVE;
	stub_event(STAX_JIT_EV_METHOD_LOAD_FINISHED_V3, &z);
	print_load("zeta", 8, zeta, zeta_size);
	run("zeta", zeta);

	if (do_fork) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			unsigned char *cpage = code_alloc(1);

			e = (struct emit){ cpage, 0 };
			prologue(&e);
			busy_loop(&e, iterations);
			epilogue(&e);
			code_protect(cpage, 1, 1);
			load_v1(9, "child", cpage, e.len, NULL, 0, SOURCE);
			run("child", cpage);
			run("alpha", alpha);
			stub_event(STAX_JIT_EV_SHUTDOWN, NULL);
			fflush(stdout);
			_exit(0);
		}
		printf("fork pid=%d\n", (int)pid);
		fflush(stdout);
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "child failed\n");
			return 1;
		}
	}

	stub_event(STAX_JIT_EV_SHUTDOWN, NULL);
	printf("shutdown\n");
	return 0;
}

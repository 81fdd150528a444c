/* A program whose entry point has no call-frame information, as the dynamic loader's
 * _start has none: _start calls run, which has. Nothing calls _start, so a stack that
 * reaches it is complete. Built -static -nostdlib: system calls are made directly.
 * Prints "ready" and runs until argv[1] seconds pass. */
__asm__(".text\n"
	".globl _start\n"
	".type _start, @function\n"
	"_start:\n"
	"	mov %rsp, %rdi\n"
	"	call run\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n" /* exit */
	"	syscall\n"
	"	hlt\n"
	".size _start, . - _start\n");

struct timespec {
	long tv_sec, tv_nsec;
};

static long sys3(long n, long a, long b, long c) {
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}

static volatile long sink;

__attribute__((noinline)) static void spin(void) {
	for (int i = 0; i < 100000; i++) sink += i;
}

__attribute__((noinline, used)) int run(long *sp) {
	long argc = sp[0];
	const char *arg = argc > 1 ? (const char *)sp[2] : "1";
	long secs = 0;
	for (; *arg >= '0' && *arg <= '9'; arg++) secs = secs * 10 + (*arg - '0');
	struct timespec t0, t;
	sys3(228, 1, (long)&t0, 0); /* clock_gettime(CLOCK_MONOTONIC) */
	sys3(1, 1, (long)"ready\n", 6); /* write */
	do {
		spin();
		sys3(228, 1, (long)&t, 0);
	} while (t.tv_sec - t0.tv_sec < secs);
	return 0;
}

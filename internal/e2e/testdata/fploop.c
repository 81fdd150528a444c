// A frame whose saved rbp points at itself, as a JIT's deoptimisation entry can leave one
// while it rewrites its frames: selfloop spins with [rbp] = rbp, so a frame-pointer walk
// from it (the kernel's) returns to its caller again and again, to the depth limit, and its
// caller's CFI (CFA = rbp+16, this file is built with frame pointers) gives the same CFA as
// selfloop's own. Usage: fploop MS spends MS milliseconds of CPU time in selfloop.
// Built by the tests with: gcc -O1 -g -fno-omit-frame-pointer
#include <stdio.h>
#include "cpubudget.h"

void selfloop(unsigned long n);

// selfloop(n) counts n down with the loop of saved frame pointers in place; its CFI is
// right (CFA = rbp+16, rbp saved at CFA-16): the memory is what goes round.
__asm__(
	"	.text\n"
	"	.globl	selfloop\n"
	"	.type	selfloop, @function\n"
	"selfloop:\n"
	"	.cfi_startproc\n"
	"	pushq	%rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	movq	%rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	movq	(%rbp), %rax\n"    // the caller's rbp
	"	movq	%rbp, (%rbp)\n"    // saved rbp := this frame
	"1:	subq	$1, %rdi\n"
	"	jnz	1b\n"
	"	movq	%rax, (%rbp)\n"    // put the caller's rbp back
	"	popq	%rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size	selfloop, .-selfloop\n");

__attribute__((noinline)) static void deopt_caller(double ms) {
	double end = thread_cpu_ms() + ms;
	do selfloop(CPU_CHUNK); while (thread_cpu_ms() < end);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
	deopt_caller(arg_ms(argc, argv, 1, 300));
	puts("done");
	return 0;
}

// A parent that forks a child; each burns CPU in its own function. The child then execs
// itself with an argument and burns CPU in a third function.
// Built by the tests with: gcc -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline
// Usage: fork MS: each of parent_work, child_work and exec_work runs for MS milliseconds of
// CPU time.
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cpubudget.h"

volatile unsigned long sink;
void parent_work(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i;
	while (thread_cpu_ms() < end);
}
void child_work(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i * 3;
	while (thread_cpu_ms() < end);
}
void exec_work(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK; i++) sink += i * 5;
	while (thread_cpu_ms() < end);
}

int main(int argc, char **argv) {
	double ms = arg_ms(argc, argv, 1, 300);
	if (argc > 2 && strcmp(argv[2], "exec") == 0) {
		exec_work(ms);
		return 0;
	}
	pid_t pid = fork();
	if (pid == 0) {
		child_work(ms);
		execl("/proc/self/exe", argv[0], argv[1], "exec", (char *)0);
		_exit(1);
	}
	parent_work(ms);
	int st;
	waitpid(pid, &st, 0);
	printf("fork done\n");
	return 0;
}

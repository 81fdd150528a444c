// A parent that forks a child; each burns CPU in its own function. The child then execs
// /bin/true-like work through exec of itself with an argument.
// Built by the tests with: gcc -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned long sink;
void parent_work(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i; }
void child_work(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i * 3; }
void exec_work(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i * 5; }

int main(int argc, char **argv) {
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 100000000UL;
	if (argc > 2 && strcmp(argv[2], "exec") == 0) {
		exec_work(n);
		return 0;
	}
	pid_t pid = fork();
	if (pid == 0) {
		child_work(n);
		char num[32];
		snprintf(num, sizeof num, "%lu", n);
		execl("/proc/self/exe", argv[0], num, "exec", (char *)0);
		_exit(1);
	}
	parent_work(n);
	int st;
	waitpid(pid, &st, 0);
	printf("fork done\n");
	return 0;
}

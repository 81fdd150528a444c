// A parent that starts N short children one after another, each a new process of its own
// program that burns MS milliseconds of CPU time in short_work and exits: the churn of
// short commands a whole host sees. Then it prints "ready" and waits for a line on its
// standard input.
// Built by the tests with: gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline
// Usage: churn N MS
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cpubudget.h"

extern char **environ;
volatile unsigned long sink;

void short_work(double ms) {
	double end = thread_cpu_ms() + ms;
	do
		for (unsigned long i = 0; i < CPU_CHUNK / 4; i++) sink += i * 7;
	while (thread_cpu_ms() < end);
}

int main(int argc, char **argv) {
	if (argc > 2 && strcmp(argv[1], "child") == 0) {
		short_work(arg_ms(argc, argv, 2, 2));
		return 0;
	}
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	char *ms = argc > 2 ? argv[2] : "2";
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len <= 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	self[len] = 0;
	for (int i = 0; i < n; i++) {
		char *args[] = {self, "child", ms, 0};
		pid_t pid;
		if (posix_spawn(&pid, self, 0, 0, args, environ) != 0) {
			perror("posix_spawn");
			return 1;
		}
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "child %d failed\n", i);
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	char line[16];
	fgets(line, sizeof line, stdin);
	return 0;
}

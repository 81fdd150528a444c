// forks: a process that forks a child, each burning MS ms of its own CPU time in a
// function of its own; "alone MS" burns in one process, as a bystander.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void burn(double ms) {
	for (double end = cpu_ms() + ms; cpu_ms() < end;)
		for (int i = 0; i < 10000; i++)
			sink += i;
}

__attribute__((noinline)) static void parent_burn(double ms) { burn(ms); }
__attribute__((noinline)) static void child_burn(double ms) { burn(ms); }
__attribute__((noinline)) static void bystander_burn(double ms) { burn(ms); }

int main(int argc, char **argv) {
	if (argc == 3 && strcmp(argv[1], "alone") == 0) {
		bystander_burn(atof(argv[2]));
		return 0;
	}
	double ms = argc > 1 ? atof(argv[1]) : 300;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		child_burn(ms);
		_exit(0);
	}
	parent_burn(ms);
	int status;
	waitpid(pid, &status, 0);
	printf("%d\n", (int)pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

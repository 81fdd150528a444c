// Starts a thread that burns CPU for each line read: for a line "m", the thread first maps
// the file argv[1] executable (a mapping the side-band records must show). Each thread says
// "thread TID ADDR" (ADDR the mapping's, 0 without). Exits at the end of its input.
// Usage: resize FILE
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile unsigned long sink;
static const char *file;

static void *burn(void *arg) {
	void *p = 0;
	if (arg) {
		int fd = open(file, O_RDONLY);
		p = fd < 0 ? MAP_FAILED : mmap(0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			perror(file);
			exit(1);
		}
	}
	printf("thread %ld %lx\n", (long)syscall(SYS_gettid), (unsigned long)p);
	fflush(stdout);
	for (;;)
		sink++;
	return 0;
}

int main(int argc, char **argv) {
	char line[64];
	file = argc > 1 ? argv[1] : argv[0];
	while (fgets(line, sizeof line, stdin)) {
		pthread_t t;
		if (pthread_create(&t, 0, burn, line[0] == 'm' ? (void *)1 : 0) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	return 0;
}

// Workloads for probe events (stax record -e uprobe:..., kprobe:...), counted in calls:
//
//   probes calls BATCHES HOT COLD
//            each of BATCHES batches, call_batch calls hot_fn HOT times and cold_fn COLD
//            times, then the program prints "batch" and reads a line (the test lets it go
//            on once the recorder has the batch's samples); at the end it prints "ready"
//            and reads a line before it exits
//   probes opens BATCHES N
//            the same with open_dev_null, which opens and closes /dev/null N times a batch
//            (the openat system call: do_sys_openat2 in the kernel)
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) long hot_fn(long x) {
	sink += x;
	return sink * 3 + 1;
}

__attribute__((noinline)) long cold_fn(long x) {
	sink -= x;
	return sink * 5 + 2;
}

__attribute__((noinline)) void call_batch(long hot, long cold) {
	for (long i = 0; i < hot; i++)
		sink += hot_fn(i);
	for (long i = 0; i < cold; i++)
		sink += cold_fn(i);
}

__attribute__((noinline)) void open_dev_null(long n) {
	for (long i = 0; i < n; i++) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0) {
			perror("open /dev/null");
			exit(1);
		}
		close(fd);
	}
}

static void wait_line(const char *say) {
	char line[64];
	printf("%s\n", say);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		exit(1);
}

int main(int argc, char **argv) {
	if (argc < 4) {
		fprintf(stderr, "usage: probes calls BATCHES HOT COLD | opens BATCHES N\n");
		return 2;
	}
	long batches = atol(argv[2]);
	for (long b = 0; b < batches; b++) {
		if (strcmp(argv[1], "calls") == 0 && argc == 5)
			call_batch(atol(argv[3]), atol(argv[4]));
		else if (strcmp(argv[1], "opens") == 0)
			open_dev_null(atol(argv[3]));
		else
			return 2;
		wait_line("batch");
	}
	wait_line("ready");
	return 0;
}

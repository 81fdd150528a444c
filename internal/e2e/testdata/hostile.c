// A program whose files are hostile to a profiler that records it as root: it puts a FIFO
// where its jitdump is sought (/tmp/jit-PID.dump), prints "ready" and spins in hostile_hot
// until it is killed. (The test puts a FIFO where its separate debug file is sought.)
// Usage: hostile [plain]: with "plain", no FIFO (for a chroot whose /tmp points elsewhere).
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
volatile unsigned long sink;
void hostile_hot(void) {
	for (;;)
		for (unsigned long i = 0; i < 1000000; i++)
			sink += i * 7;
}
int main(int argc, char **argv) {
	char path[64] = "";
	if (argc < 2 || strcmp(argv[1], "plain") != 0)
		snprintf(path, sizeof path, "/tmp/jit-%d.dump", (int)getpid());
	if (path[0] && mkfifo(path, 0600) != 0) {
		perror("mkfifo");
		return 1;
	}
	printf("ready %s\n", path);
	fflush(stdout);
	hostile_hot();
	return 0;
}

// Counts the SIGINTs it gets. It prints "ready", waits for the first SIGINT, then spends
// half a second "cleaning up" (the window in which a second, duplicated SIGINT would
// arrive) and exits printing how many it got. SIGINT stays blocked but while it waits
// (sigsuspend): one that came between a check of the count and a pause() would leave it
// waiting for another.
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t count;
static void on_int(int sig) { (void)sig; count++; }

int main(void) {
	struct sigaction sa = {0};
	sa.sa_handler = on_int;
	sigaction(SIGINT, &sa, 0);
	sigset_t block, waiting;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &waiting);
	printf("ready\n");
	fflush(stdout);
	while (count == 0)
		sigsuspend(&waiting);
	sigprocmask(SIG_SETMASK, &waiting, 0);
	struct timespec left = {0, 500000000};
	while (nanosleep(&left, &left) != 0)
		;
	printf("sigints %d\n", (int)count);
	return 0;
}

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

// Threads that contend on one monitor: each runs work inside a synchronized block and
// some outside it, until it has used the milliseconds of CPU time given as the first
// argument; the second argument is the number of threads (default 4).
public class Contend {
    static final Object lock = new Object();
    static long shared;

    static long work(long n) {
        long s = 0;
        for (long i = 0; i < n; i++) {
            s += (i * 31) ^ (s >>> 3);
        }
        return s;
    }

    static void locked(long n) {
        synchronized (lock) {
            shared += work(n);
        }
    }

    public static void main(String[] args) throws Exception {
        long budget = Long.parseLong(args[0]) * 1_000_000L;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            ts[i] = new Thread(() -> {
                while (mx.getCurrentThreadCpuTime() < budget) {
                    locked(400_000);
                    shared ^= work(100_000);
                }
            }, "worker-" + i);
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println(shared == 42 ? "" : "done");
    }
}

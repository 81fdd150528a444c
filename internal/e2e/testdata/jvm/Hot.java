public class Hot {
    static volatile long sink;
    static long alpha(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * 3 ^ (s >>> 7); return s; }
    static long beta(long n) { long s = 0; for (long i = 0; i < n; i++) s += i * 5 ^ (s >>> 3); return s; }
    public static void main(String[] a) {
        long ms = Long.parseLong(a[0]);
        java.lang.management.ThreadMXBean tm = java.lang.management.ManagementFactory.getThreadMXBean();
        long end = tm.getCurrentThreadCpuTime() + ms * 1_000_000L;
        while (tm.getCurrentThreadCpuTime() < end) { sink += alpha(100_000); sink += beta(200_000); }
        System.out.println("done");
    }
}

__attribute__((noinline)) static int lib_internal(int x) { return x * x + 1; }
int lib_square(int x) { return lib_internal(x) - 1; }

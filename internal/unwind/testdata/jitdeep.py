# Python calls nested DEPTH deep, each entered through its own perf trampoline when CPython
# runs with -X perf: prints "ready" once warm, then runs until the process has used the CPU
# seconds given as the first argument.
import sys
import time

DEPTH = 8


def spin(n):
    s = 0
    for i in range(n):
        s += i
    return s


def nest(d):
    if d:
        return nest(d - 1)
    return spin(2000)


budget = float(sys.argv[1])
for _ in range(200):
    nest(DEPTH)
print("ready", flush=True)
while time.process_time() < budget:
    nest(DEPTH)

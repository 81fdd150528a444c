# spin_b does twice spin_a's work; both are called from module level until the process has
# used the CPU seconds given as the first argument. At the end it prints the work done (in
# spin_a calls' worth) and the CPU seconds it used.
import sys
import time


def spin_a(n):
    s = 0
    for i in range(n):
        s += i
    return s


def spin_b(n):
    s = 0
    for i in range(2 * n):
        s += i
    return s


budget = float(sys.argv[1])
work = 0
while time.process_time() < budget:
    spin_a(20000)
    spin_b(20000)
    work += 3
print(work, time.process_time())

// Recursion through V8's optimized code (frame pointers, no unwinding info): prints "ready"
// once warm, then runs until the process has used the CPU seconds given as argv[2].
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
const budgetUs = Number(process.argv[2]) * 1e6;
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
let total = 0;
for (let i = 0; i < 200; i++) total += fib(18);
console.log("ready");
while (cpu() < budgetUs) total += fib(22);
if (total < 0) console.log(total);

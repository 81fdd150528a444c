// Spends its time in fib until the process has used argv[2] milliseconds of CPU time
// (default 3000), so the sample count does not depend on the machine's speed.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function work() { let s = 0; for (let i = 0; i < 40; i++) s += fib(25); return s; }
let total = 0;
const budgetUs = (Number(process.argv[2]) || 3000) * 1000;
const cpu = () => { const u = process.cpuUsage(); return u.user + u.system; };
const start = cpu();
while (cpu() - start < budgetUs) total += work();
console.log("node done", total > 0);

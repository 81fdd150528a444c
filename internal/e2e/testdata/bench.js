function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function work() { let s = 0; for (let i = 0; i < 40; i++) s += fib(25); return s; }
let total = 0;
const end = Date.now() + (Number(process.argv[2]) || 3000);
while (Date.now() < end) total += work();
console.log("node done", total > 0);

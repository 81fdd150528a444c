// churn.js ROUNDS MS: V8 code churn. Each round compiles spinA and spinB afresh (new
// Function: a new script, so new code objects of the same source, name and size), runs
// each for MS ms of the process's CPU time, long enough to be optimised and sampled, and
// also compiles and runs a throw-away body of another size. Every round ends with a full
// collection (run node with --expose-gc), which frees the previous round's code, so later
// code objects are written at the addresses of earlier ones. It ends after ROUNDS rounds.
'use strict';
const rounds = Number(process.argv[2]);
const ms = Number(process.argv[3]);
if (!(rounds > 0) || !(ms > 0) || typeof gc !== 'function') {
  console.error('usage: node --expose-gc churn.js ROUNDS MS');
  process.exit(2);
}
function cpuNs() {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}
const srcA = 'return function spinA(o, n) { let s = 0; for (let i = 0; i < n; i++) s = (s + o.x * i) ^ (s >>> 3); return s; }';
const srcB = 'return function spinB(o, n) { let s = 1; for (let i = 0; i < n; i++) s = (s * 31 + o.y + i) | 0; return s; }';
function run(f, o, budgetNs) {
  const start = cpuNs();
  let x = 0;
  while (cpuNs() - start < budgetNs) x ^= f(o, 20000);
  return x;
}
let sink = 0;
for (let r = 0; r < rounds; r++) {
  const o = { x: r + 1, y: r + 2 };
  sink ^= run(new Function(srcA)(), o, ms * 1e6);
  sink ^= run(new Function(srcB)(), o, ms * 1e6);
  // another function's code, of another size, written where the old code was
  const filler = new Function('o', 'n', `let s = ${r}; for (let i = 0; i < n; i++) s = (s + o.x * i + ${r} * (i & 7)) | 0; return s;`);
  sink ^= run(filler, o, ms * 1e5);
  gc();
}
console.log('rounds', rounds, sink & 1);

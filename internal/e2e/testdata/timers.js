// timers.js ROUNDS MS: each round runs spin() for MS/10 ms of the process's CPU time, then
// waits MS on a timer (setTimeout). At the end it prints its CPU time ("cpu NS") and wall
// time since it started ("wall NS").
'use strict';
const rounds = Number(process.argv[2]);
const ms = Number(process.argv[3]);
if (!(rounds > 0) || !(ms > 0)) {
  console.error('usage: node timers.js ROUNDS MS');
  process.exit(2);
}
function cpuNs() {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}
function spin(budgetNs) {
  const start = cpuNs();
  let x = 1;
  while (cpuNs() - start < budgetNs) {
    for (let i = 0; i < 100000; i++) x = (x * 1103515245 + 12345) % 2147483648;
  }
  return x;
}
const start = process.hrtime.bigint();
let round = 0;
let sum = 0;
function tick() {
  if (round++ === rounds) {
    console.log(`cpu ${cpuNs()}\nwall ${process.hrtime.bigint() - start}\nsum ${sum & 1}`);
    return;
  }
  sum += spin(ms * 1e5);
  setTimeout(tick, ms);
}
tick();

// hot() is optimised, deoptimised by a new argument shape, and optimised again, many times.
function hot(o, n) { let s = 0; for (let i = 0; i < n; i++) s += (o.x * i) ^ (s >>> 3); return s; }
const end = process.cpuUsage().user + 2_000_000;
let sink = 0, round = 0;
while (process.cpuUsage().user < end) {
  const o = {}; o["k" + (round++ % 40)] = 1; o.x = round; // a new hidden class each round
  sink += hot(o, 200000);
}
console.log("rounds", round, sink > 0);

// hot() is optimised, deoptimised by a new argument shape and optimised again, once per
// phase: phase p passes objects of p+1 shapes (one new), for 300 ms of CPU time, so each
// code version of hot() runs long enough to be sampled many times on any machine.
function hot(o, n) { let s = 0; for (let i = 0; i < n; i++) s += (o.x * i) ^ (s >>> 3); return s; }
const start = process.cpuUsage().user;
let sink = 0, round = 0;
for (let phase = 0; phase < 7; phase++) {
  const end = start + (phase + 1) * 300_000;
  while (process.cpuUsage().user < end) {
    const o = {}; o["k" + (round++ % (phase + 1))] = 1; o.x = round; // one of phase+1 hidden classes
    sink += hot(o, 200000);
  }
}
console.log("rounds", round, sink > 0);

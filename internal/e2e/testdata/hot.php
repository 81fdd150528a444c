<?php
// Two hot functions at 1:2 work for PHP's opcache JIT: func_one and func_two each take a
// fixed share of the process's CPU time (MS milliseconds in all, default 1000).
function cpu_ms() {
	$u = getrusage();
	return ($u["ru_utime.tv_sec"] + $u["ru_stime.tv_sec"]) * 1e3 + ($u["ru_utime.tv_usec"] + $u["ru_stime.tv_usec"]) / 1e3;
}
function func_one($ms) {
	$end = cpu_ms() + $ms;
	$s = 0;
	do {
		for ($i = 0; $i < 20000; $i++) { $s = ($s + $i * 3) % 1000003; }
	} while (cpu_ms() < $end);
	return $s;
}
function func_two($ms) {
	$end = cpu_ms() + $ms;
	$s = 0;
	do {
		for ($i = 0; $i < 20000; $i++) { $s = ($s ^ ($i * 5)) % 1000003; }
	} while (cpu_ms() < $end);
	return $s;
}
$ms = isset($argv[1]) ? (float)$argv[1] : 1000;
$t = 0;
for ($r = 0; $r < 10; $r++) {
	$t += func_one($ms / 30);
	$t += func_two(2 * $ms / 30);
}
echo "done $t\n";

#!/bin/sh
# Builds libstax-jitcollector.so, the JIT Profiling API and ITT API collector of stax.
# Usage: collector/build.sh OUTDIR      (compiler: $CC, default cc)
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
${CC:-cc} -std=gnu11 -Wall -Wextra -O2 -fPIC -shared -fvisibility=hidden -pthread \
	-o "$1/libstax-jitcollector.so" "$src/stax_jitcollector.c" "$src/stax_itt.c"

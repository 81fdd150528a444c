#!/bin/sh
# Builds libstax-jitcollector.so, the JIT Profiling API and ITT API collector of stax.
# Usage: collector/build.sh OUTDIR      (compiler: $CC, default cc; more flags, after
# those of build.conf: $COLLECTOR_EXTRA_CFLAGS)
# The library's name, sources and flags are in build.conf.
set -eu
if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
src=$(cd "$(dirname "$0")" && pwd)
. "$src/build.conf"
mkdir -p "$1"
srcs=
for s in $SOURCES; do
	srcs="$srcs $src/$s"
done
# shellcheck disable=SC2086 # CC, the flags and srcs are word lists
${CC:-cc} $CFLAGS ${COLLECTOR_EXTRA_CFLAGS:-} -o "$1/$LIB" $srcs

/*
 * stax_abi.h - what stax's collector shares with stax beyond the file
 * formats: the environment variables it reads and where its files go.
 * stax defines the same once in Go (internal/collectorabi), and a test
 * compares the two.
 */
#ifndef STAX_ABI_H
#define STAX_ABI_H

#define STAX_ENV_JIT_PROFILER64 "INTEL_JIT_PROFILER64" /* names the collector to JITs */
#define STAX_ENV_ITT64 "INTEL_LIBITTNOTIFY64"          /* names it to ITT API programs */
#define STAX_ENV_COLLECT "STAX_JIT_COLLECT"            /* "1": the collector writes */
#define STAX_ENV_DIR "STAX_JIT_DIR"                    /* directory of its files */
#define STAX_ENV_ITT_MAX_MB "STAX_ITT_MAX_MB"          /* bound of the spans file, MiB */
#define STAX_DEFAULT_DIR "/tmp"                        /* when STAX_JIT_DIR is unset */
#define STAX_ITT_SPANS_PREFIX "itt-"                   /* itt-<pid>.spans */
#define STAX_SPANS_SUFFIX ".spans"

#endif

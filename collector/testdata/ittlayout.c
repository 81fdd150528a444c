/*
 * ittlayout.c - prints the spans file format and the environment as
 * stax_itt.h and stax_abi.h define them, for comparison with stax's Go
 * definition, one per line:
 *
 *   int NAME VALUE      a number (NAME without the STAX_ prefix)
 *   str NAME VALUE      a string, printed with %s between brackets: [VALUE]
 */
#include <stdio.h>
#include <string.h>

#include "../stax_abi.h"
#include "../stax_itt.h"

#define INT(name) printf("int %s %llu\n", #name, (unsigned long long)(STAX_##name))
#define STR(name) printf("str %s [%s]\n", #name, STAX_##name)

int main(void)
{
	static const char magic[] = STAX_ITT_FILE_MAGIC;

	/* the magic as bytes: it ends in \2 */
	printf("int ITT_FILE_MAGIC_LEN %zu\n", strlen(magic));
	printf("int ITT_FILE_MAGIC_VERSION %d\n", magic[7]);
	printf("str ITT_FILE_MAGIC_TEXT [%.7s]\n", magic);
	INT(ITT_HEADER);
	INT(ITT_HDR_PID);
	INT(ITT_HDR_SIZE);
	INT(ITT_HDR_START);
	INT(ITT_HDR_DROPPED);
	INT(ITT_HDR_FAILED);
	INT(ITT_HDR_ERRNO);
	INT(ITT_NAME);
	INT(ITT_TASK);
	INT(ITT_MARK);
	INT(ITT_DROP);
	INT(ITT_NOTE);
	INT(ITT_TASK_UNFINISHED);
	INT(ITT_MAX_NAME);
	INT(ITT_MAX_DEPTH);
	STR(ENV_JIT_PROFILER64);
	STR(ENV_ITT64);
	STR(ENV_COLLECT);
	STR(ENV_DIR);
	STR(ENV_ITT_MAX_MB);
	STR(DEFAULT_DIR);
	STR(ITT_SPANS_PREFIX);
	STR(SPANS_SUFFIX);
	return 0;
}

/*
 * jitdumplayout.c - prints the jitdump format as stax_jitdump.h defines it,
 * for comparison with stax's Go definition:
 *
 *   const NAME VALUE           a constant (NAME without the STAX_JITDUMP_ prefix)
 *   size LAYOUT BYTES          sizeof a layout, named as in Go
 *   field LAYOUT NAME OFFSET BYTES
 */
#include <stddef.h>
#include <stdio.h>

#include "../stax_jitdump.h"

#define CONST(name) printf("const %s %llu\n", #name, (unsigned long long)STAX_JITDUMP_##name)
#define SIZE(go, c) printf("size %s %zu\n", #go, sizeof(struct c))
#define FIELD(go, c, f) \
	printf("field %s %s %zu %zu\n", #go, #f, offsetof(struct c, f), sizeof(((struct c *)0)->f))

int main(void)
{
	CONST(MAGIC);
	CONST(VERSION);
	CONST(FLAG_ARCH_TIMESTAMP);
	CONST(ELF_MACH);
	CONST(CODE_LOAD);
	CONST(CODE_MOVE);
	CONST(CODE_DEBUG_INFO);
	CONST(CODE_CLOSE);
	CONST(CODE_UNWINDING_INFO);
	CONST(STAX_METHOD_ID);
	CONST(STAX_INLINE);
	CONST(STAX_CODE_UNLOAD);
	CONST(LOST_MAGIC);

	SIZE(Header, stax_jitdump_header);
	FIELD(Header, stax_jitdump_header, magic);
	FIELD(Header, stax_jitdump_header, version);
	FIELD(Header, stax_jitdump_header, total_size);
	FIELD(Header, stax_jitdump_header, elf_mach);
	FIELD(Header, stax_jitdump_header, pad1);
	FIELD(Header, stax_jitdump_header, pid);
	FIELD(Header, stax_jitdump_header, timestamp);
	FIELD(Header, stax_jitdump_header, flags);

	SIZE(StaxLost, stax_jitdump_lost);
	FIELD(StaxLost, stax_jitdump_lost, magic);
	FIELD(StaxLost, stax_jitdump_lost, size);
	FIELD(StaxLost, stax_jitdump_lost, functions);
	FIELD(StaxLost, stax_jitdump_lost, failed_writes);
	FIELD(StaxLost, stax_jitdump_lost, error);

	SIZE(RecordPrefix, stax_jitdump_record_prefix);
	FIELD(RecordPrefix, stax_jitdump_record_prefix, id);
	FIELD(RecordPrefix, stax_jitdump_record_prefix, total_size);
	FIELD(RecordPrefix, stax_jitdump_record_prefix, timestamp);

	SIZE(CodeLoad, stax_jitdump_code_load);
	FIELD(CodeLoad, stax_jitdump_code_load, pid);
	FIELD(CodeLoad, stax_jitdump_code_load, tid);
	FIELD(CodeLoad, stax_jitdump_code_load, vma);
	FIELD(CodeLoad, stax_jitdump_code_load, code_addr);
	FIELD(CodeLoad, stax_jitdump_code_load, code_size);
	FIELD(CodeLoad, stax_jitdump_code_load, code_index);

	SIZE(CodeMove, stax_jitdump_code_move);
	FIELD(CodeMove, stax_jitdump_code_move, pid);
	FIELD(CodeMove, stax_jitdump_code_move, tid);
	FIELD(CodeMove, stax_jitdump_code_move, vma);
	FIELD(CodeMove, stax_jitdump_code_move, old_code_addr);
	FIELD(CodeMove, stax_jitdump_code_move, new_code_addr);
	FIELD(CodeMove, stax_jitdump_code_move, code_size);
	FIELD(CodeMove, stax_jitdump_code_move, code_index);

	SIZE(DebugInfo, stax_jitdump_debug_info);
	FIELD(DebugInfo, stax_jitdump_debug_info, code_addr);
	FIELD(DebugInfo, stax_jitdump_debug_info, nr_entry);

	SIZE(DebugEntry, stax_jitdump_debug_entry);
	FIELD(DebugEntry, stax_jitdump_debug_entry, addr);
	FIELD(DebugEntry, stax_jitdump_debug_entry, line);
	FIELD(DebugEntry, stax_jitdump_debug_entry, discrim);

	SIZE(UnwindingInfo, stax_jitdump_unwinding_info);
	FIELD(UnwindingInfo, stax_jitdump_unwinding_info, unwinding_size);
	FIELD(UnwindingInfo, stax_jitdump_unwinding_info, eh_frame_hdr_size);
	FIELD(UnwindingInfo, stax_jitdump_unwinding_info, mapped_size);

	SIZE(StaxMethodID, stax_jitdump_stax_method_id);
	FIELD(StaxMethodID, stax_jitdump_stax_method_id, code_addr);
	FIELD(StaxMethodID, stax_jitdump_stax_method_id, code_size);
	FIELD(StaxMethodID, stax_jitdump_stax_method_id, method_id);
	FIELD(StaxMethodID, stax_jitdump_stax_method_id, pad);

	SIZE(StaxInline, stax_jitdump_stax_inline);
	FIELD(StaxInline, stax_jitdump_stax_inline, method_id);
	FIELD(StaxInline, stax_jitdump_stax_inline, parent_method_id);
	FIELD(StaxInline, stax_jitdump_stax_inline, start);
	FIELD(StaxInline, stax_jitdump_stax_inline, size);

	SIZE(StaxCodeUnload, stax_jitdump_stax_code_unload);
	FIELD(StaxCodeUnload, stax_jitdump_stax_code_unload, code_addr);
	FIELD(StaxCodeUnload, stax_jitdump_stax_code_unload, code_size);
	return 0;
}

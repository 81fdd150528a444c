#include "textflag.h"

// func callJIT(addr uintptr) uint64
//
// Calls the generated function at addr, which takes no arguments and
// returns its result in AX. The non-zero frame size makes the assembler
// save BP and set up a frame, so the generated code's own push rbp/mov
// rbp,rsp prologue chains onto a proper Go frame and frame-pointer
// unwinding walks from the generated code into Go.
TEXT ·callJIT(SB), NOSPLIT, $8-16
	MOVQ addr+0(FP), AX
	CALL AX
	MOVQ AX, ret+8(FP)
	RET

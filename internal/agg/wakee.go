package agg

import (
	"strconv"
	"strings"
)

// The wakers of a run are two profiles over the same keys: per waker thread and stack, the
// time off CPU its wakeups ended (nanoseconds) and how many they were. Each stack's leaf
// frame is WakeeFunc of the thread woken.

const wakeePrefix = "[woke "

// WakeeFunc is the frame that leads a waker's stack: the thread it woke.
func WakeeFunc(tid uint32) string { return wakeePrefix + strconv.FormatUint(uint64(tid), 10) + "]" }

// ParseWakeeFunc reads the tid of a frame named by WakeeFunc; false for any other name.
func ParseWakeeFunc(f string) (uint32, bool) {
	s, ok := strings.CutPrefix(f, wakeePrefix)
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "]")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}

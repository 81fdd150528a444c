package perfevent

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/stax-profiler/stax/internal/perfrecord"
)

// CounterReadFormat is the read_format of the sampling events that read their counters
// (Config.Counters) with each sample: the group's values with their ids, and the times the
// group was enabled and running (less running than enabled: the kernel multiplexed it).
const CounterReadFormat = perfrecord.FormatGroup | perfrecord.FormatID | perfrecord.FormatTotalTimeEnabled | perfrecord.FormatTotalTimeRunning

// counterState is what a session keeps of the counters read with each sample.
type counterState struct {
	// leaders are the ids of the sampling events that lead a group of counters: their
	// samples carry the group's read (perfrecord.SampleRead with CounterReadFormat).
	leaders map[uint64]bool
	// ids maps a counter's id to its index in Config.Counters.
	ids map[uint64]int
}

// IsCounterLeader says whether a sample's id is that of a sampling event that reads the
// counters (its samples are laid out with perfrecord.SampleRead).
func (s *Session) IsCounterLeader(id uint64) bool { return s.counters.leaders[id] }

// CounterOf is the index in Config.Counters of the counter with id, false for another id
// (the leader's own value).
func (s *Session) CounterOf(id uint64) (int, bool) {
	i, ok := s.counters.ids[id]
	return i, ok
}

// leaderRead makes a, the attr of the first sampling event (typ, config), read cfg's
// counters with each sample.
func (s *Session) leaderRead(cfg Config, a *unix.PerfEventAttr, typ uint32, config uint64) {
	if len(cfg.Counters) == 0 || typ != s.evType || config != s.evConfig {
		return
	}
	a.Sample_type |= perfrecord.SampleRead
	a.Read_format = CounterReadFormat
}

// openCounters opens cfg's counters for thread pid on cpu as a group under the first
// sampling event just opened for it (the last of s.sampleFDs), and keeps their ids.
func (s *Session) openCounters(cfg Config, pid, cpu int) error {
	if len(cfg.Counters) == 0 || len(s.sampleFDs) == 0 {
		return nil
	}
	if s.counters.ids == nil {
		s.counters = counterState{leaders: map[uint64]bool{}, ids: map[uint64]int{}}
	}
	leader := s.sampleFDs[len(s.sampleFDs)-1]
	id, err := eventID(leader)
	if err != nil {
		return fmt.Errorf("read the id of the sampling event: %w", err)
	}
	s.counters.leaders[id] = true
	for i, ev := range cfg.Counters {
		a := &unix.PerfEventAttr{Type: ev.Type, Config: ev.Config, Ext1: ev.Config1, Ext2: ev.Config2,
			Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{})), Read_format: CounterReadFormat, Clockid: unix.CLOCK_MONOTONIC}
		a.Bits = unix.PerfBitInherit | unix.PerfBitExcludeHv | unix.PerfBitUseClockID
		if cfg.SystemWide {
			a.Bits &^= unix.PerfBitInherit
		}
		if s.UserOnly {
			a.Bits |= unix.PerfBitExcludeKernel
		}
		fd, err := unix.PerfEventOpen(a, pid, cpu, leader, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
				return fmt.Errorf("open the counter %s: %w (stax list-events says what this machine counts)", ev.Name, err)
			}
			return fmt.Errorf("open the counter %s for pid %d on cpu %d: %w", ev.Name, pid, cpu, err)
		}
		cid, err := eventID(fd)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("read the id of the counter %s: %w", ev.Name, err)
		}
		s.fds = append(s.fds, fd)
		s.counters.ids[cid] = i
	}
	return nil
}

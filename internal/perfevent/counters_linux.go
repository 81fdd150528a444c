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
	// members are the counters' fds of each leader's group, by the leader's fd: closed
	// with it (RetireStack).
	members map[int][]int
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
	leader := s.sampleFDs[len(s.sampleFDs)-1]
	fds, err := s.openCounterGroup(cfg, pid, cpu, leader)
	s.fds = append(s.fds, fds...)
	return err
}

// openCounterGroup opens cfg's counters for thread pid on cpu as a group under the
// sampling event leader, keeps their ids and returns their fds (those it opened, on an
// error too: the caller closes them, or keeps them with the session's).
func (s *Session) openCounterGroup(cfg Config, pid, cpu, leader int) (fds []int, err error) {
	if s.counters.ids == nil {
		s.counters = counterState{leaders: map[uint64]bool{}, ids: map[uint64]int{}, members: map[int][]int{}}
	}
	defer func() { s.counters.members[leader] = fds }()
	id, err := eventID(leader)
	if err != nil {
		return nil, fmt.Errorf("read the id of the sampling event: %w", err)
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
				return fds, fmt.Errorf("open the counter %s: %w (stax list-events says what this machine counts)", ev.Name, err)
			}
			return fds, fmt.Errorf("open the counter %s for pid %d on cpu %d: %w", ev.Name, pid, cpu, err)
		}
		fds = append(fds, fd)
		cid, err := eventID(fd)
		if err != nil {
			return fds, fmt.Errorf("read the id of the counter %s: %w", ev.Name, err)
		}
		s.counters.ids[cid] = i
	}
	return fds, nil
}

// closeCounterGroup closes the counters of leader's group, and says which fds they were.
func (s *Session) closeCounterGroup(leader int) []int {
	fds := s.counters.members[leader]
	for _, fd := range fds {
		unix.Close(fd)
	}
	delete(s.counters.members, leader)
	return fds
}

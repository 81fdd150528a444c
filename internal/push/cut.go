package push

// Cut is the time (monotonic ns, the samples' clock) before which every sample was
// queued to be pushed: a rolling window on disk lets samples go only before it.
func (p *Pusher) Cut() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

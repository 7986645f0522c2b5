package room

// Crash stops the Store the way a killed process stops: its goroutines end
// and its connections close, and nothing of its own is removed from the
// room. Close afterwards does nothing.
func (s *Store) Crash() {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closeD {
		return
	}
	s.closeD = true
	s.stop()
	s.wg.Wait()
	s.stopSubscriptions()
	s.closed.Store(true)
	s.pool.Close()
}

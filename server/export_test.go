package server

// WaitingAskers counts the tool calls of every session waiting for a
// human's answer (for tests that must know a call has reached the gate).
func WaitingAskers(s *Server) int {
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	n := 0
	for _, sess := range sessions {
		sess.mu.Lock()
		a := sess.asker
		sess.mu.Unlock()
		if a == nil {
			continue
		}
		a.mu.Lock()
		for _, list := range a.askers {
			n += len(list)
		}
		a.mu.Unlock()
	}
	return n
}

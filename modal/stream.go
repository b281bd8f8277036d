package modal

import (
	"sync"

	sdk "github.com/modal-labs/libmodal/modal-go"
)

// stderrKeep is how much of the agent's recent standard error a stream
// keeps for a failed handshake's message.
const stderrKeep = 4 << 10

// stream joins an exec's stdin and stdout into the agent's byte stream.
// Its stderr is drained by a goroutine the stream owns; Close ends it.
type stream struct {
	cp   *sdk.ContainerProcess
	once sync.Once
	done chan struct{} // closed when the stderr reader returns

	// inMu serialises writes and the close of stdin: the SDK's stdin
	// keeps an unguarded offset.
	inMu sync.Mutex

	mu     sync.Mutex
	stderr []byte
}

func newStream(cp *sdk.ContainerProcess) *stream {
	s := &stream{cp: cp, done: make(chan struct{})}
	go s.drain()
	return s
}

func (s *stream) drain() {
	defer close(s.done)
	buf := make([]byte, 4096)
	for {
		n, err := s.cp.Stderr.Read(buf)
		if n > 0 {
			s.mu.Lock()
			s.stderr = append(s.stderr, buf[:n]...)
			if len(s.stderr) > stderrKeep {
				s.stderr = s.stderr[len(s.stderr)-stderrKeep:]
			}
			s.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

func (s *stream) Read(p []byte) (int, error) { return s.cp.Stdout.Read(p) }

func (s *stream) Write(p []byte) (int, error) {
	s.inMu.Lock()
	defer s.inMu.Unlock()
	return s.cp.Stdin.Write(p)
}

// Close closes the process's stdin (the agent exits on it) and stops
// reading its output.
func (s *stream) Close() error {
	var err error
	s.once.Do(func() {
		s.inMu.Lock()
		err = s.cp.Stdin.Close()
		s.inMu.Unlock()
		s.cp.Stdout.Close()
		s.cp.Stderr.Close()
		<-s.done
	})
	return err
}

// Stderr is the process's recent standard error.
func (s *stream) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.stderr)
}

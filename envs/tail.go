package envs

import (
	"bytes"
	"sync"
)

// Tail keeps the last Max bytes written to it: the end of a helper
// process's stderr (an agent, a kernel, a remote shell), for the error
// that says why it died. It is safe for concurrent use.
type Tail struct {
	Max int // bytes kept; zero keeps nothing

	mu sync.Mutex
	b  []byte
}

// NewTail returns a Tail that keeps max bytes.
func NewTail(max int) *Tail { return &Tail{Max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

// String is what was kept, without surrounding white space.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}

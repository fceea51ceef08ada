// Package syncbuf is a bytes.Buffer that tests can write from one
// goroutine (a logger, a command's output) while reading from another.
package syncbuf

import (
	"bytes"
	"context"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent Write, String and WaitFor.
// Its zero value is an empty buffer ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// changed is closed by the next Write; nil while nobody waits.
	changed chan struct{}
}

// Write implements io.Writer.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor waits until ok reports true of what was written so far, checking
// again after every Write, or until ctx ends, and then returns ctx's
// error. ok runs with the buffer locked: it must not write to it.
func (s *Buffer) WaitFor(ctx context.Context, ok func(string) bool) error {
	for {
		s.mu.Lock()
		if ok(s.b.String()) {
			s.mu.Unlock()
			return nil
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

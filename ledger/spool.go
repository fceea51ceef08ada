package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// ErrSpool wraps the failures of a spool (a write or fsync of its file),
// as told to WriterOptions.OnSpoolError.
var ErrSpool = errors.New("spool")

// Spool is the spool of usage records (see SpoolOf), which a Writer owns.
type Spool = SpoolOf[Usage]

// AuditSpool is the spool of audit entries, which an AuditLog owns.
type AuditSpool = SpoolOf[AuditEntry]

// SpoolOf is an append-only file of records, one JSON object a line,
// that makes a record durable before the request that made it is done:
// Append returns once the record's line is on disk (fsynced). Appends are
// fsynced in groups: a line waits for the fsync in flight, if any, and
// then for one more that covers every line written meanwhile, so that a
// busy gateway makes one fsync per group of requests, not per request.
//
// The Writer owns its spool: it appends each record it takes (Add), sets
// the file back to the records not yet stored after each batch it stores
// (Truncate when none are left, Rewrite otherwise), and gives a new
// Writer the spool's records to store first (OpenSpool's replay). A
// replayed record is stored at most once however often it is replayed,
// because the store skips a RequestID it holds (RecordUsage).
//
// A replayed audit entry is likewise stored once (its ID).
//
// A SpoolOf is safe for concurrent use.
type SpoolOf[T any] struct {
	path string
	// valid tells a complete record from what a torn line parses to.
	valid func(T) bool

	mu      sync.Mutex
	f       *os.File
	lines   int    // records in the file
	written uint64 // lines appended so far
	synced  uint64 // lines known to be on disk
	syncing bool   // an fsync is in flight
	err     error  // the last fsync's failure, for the lines it covered
	wake    chan struct{}
	closed  bool
}

// OpenSpool opens (creating it, and its directory) the spool file at
// path and returns it with the records it holds, oldest first: those a
// previous process appended and did not store. A torn last line (the
// process died while writing it) is cut off: its request was never
// answered, since Append had not returned.
func OpenSpool(path string) (*Spool, []Usage, error) {
	return openSpool(path, func(u Usage) bool { return u.RequestID != "" })
}

// OpenAuditSpool opens the spool of audit entries at path, as OpenSpool
// does the usage spool, with the entries it holds, oldest first.
func OpenAuditSpool(path string) (*AuditSpool, []AuditEntry, error) {
	return openSpool(path, func(e AuditEntry) bool { return e.ID != "" && e.Action != "" && !e.At.IsZero() })
}

func openSpool[T any](path string, valid func(T) bool) (*SpoolOf[T], []T, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrSpool, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrSpool, err)
	}
	recs, good, err := readSpool(f, valid)
	if err == nil {
		err = f.Truncate(good)
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrSpool, path, err)
	}
	s := &SpoolOf[T]{path: path, valid: valid, f: f, lines: len(recs), wake: make(chan struct{})}
	return s, recs, nil
}

// readSpool reads the records of f and the length of its complete lines.
func readSpool[T any](f *os.File, valid func(T) bool) ([]T, int64, error) {
	var recs []T
	var good int64
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return recs, good, nil // a partial line, if any, is torn
		}
		if err != nil {
			return nil, 0, err
		}
		var u T
		if json.Unmarshal(bytes.TrimSpace(line), &u) != nil || !valid(u) {
			// Only a torn line can fail to parse (lines are written whole
			// and in order), and only the last: keep what came before.
			return recs, good, nil
		}
		recs = append(recs, u)
		good += int64(len(line))
	}
}

// Path returns the spool file's path.
func (s *SpoolOf[T]) Path() string { return s.path }

// write appends u's line without waiting for the disk, and returns its
// sequence number for wait.
func (s *SpoolOf[T]) write(u T) (uint64, error) {
	b, err := json.Marshal(u)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrSpool, err)
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, fmt.Errorf("%w: closed", ErrSpool)
	}
	if _, err := s.f.Write(b); err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrSpool, s.path, err)
	}
	s.lines++
	s.written++
	return s.written, nil
}

// wait returns once line seq is on disk: it joins the fsync in flight or
// starts the next one. It returns the fsync's error if that failed.
func (s *SpoolOf[T]) wait(seq uint64) error {
	s.mu.Lock()
	for {
		if s.synced >= seq {
			err := s.err
			s.mu.Unlock()
			return err
		}
		if !s.syncing {
			s.syncLocked()
			continue
		}
		ch := s.wake
		s.mu.Unlock()
		<-ch
		s.mu.Lock()
	}
}

// syncLocked fsyncs every line written so far, with s.mu released
// meanwhile, and wakes the waiters. Requires s.mu held.
func (s *SpoolOf[T]) syncLocked() {
	s.syncing = true
	f, target := s.f, s.written
	s.mu.Unlock()
	err := f.Sync()
	s.mu.Lock()
	s.syncing = false
	if f != s.f {
		f.Close() // replaced by Rewrite meanwhile: the new file is synced
		err = nil
	} else if s.closed {
		f.Close()
	}
	if err != nil {
		err = fmt.Errorf("%w: fsync %s: %w", ErrSpool, s.path, err)
	}
	s.err = err
	s.synced = max(s.synced, target)
	close(s.wake)
	s.wake = make(chan struct{})
}

// Append writes u to the spool and returns once it is on disk.
func (s *SpoolOf[T]) Append(u T) error {
	seq, err := s.write(u)
	if err != nil {
		return err
	}
	return s.wait(seq)
}

// Lines returns how many records the file holds.
func (s *SpoolOf[T]) Lines() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines
}

// Truncate empties the spool: every record in it is stored.
func (s *SpoolOf[T]) Truncate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.lines == 0 {
		return nil
	}
	if err := s.f.Truncate(0); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSpool, s.path, err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSpool, s.path, err)
	}
	s.lines = 0
	s.releaseLocked()
	return nil
}

// releaseLocked wakes the waiters of lines that need no fsync any more:
// they are stored, or in a file that is on disk. Requires s.mu held.
func (s *SpoolOf[T]) releaseLocked() {
	if s.synced < s.written {
		s.synced = s.written
		s.err = nil
		close(s.wake)
		s.wake = make(chan struct{})
	}
}

// Rewrite replaces the spool by a file of just keep (the records not yet
// stored), written beside it, fsynced and renamed over it. It costs a
// write of keep, so the Writer calls it only once the file holds many
// more records than keep. No Append may run meanwhile (the Writer holds
// its lock): every line of the old file must be stored or in keep.
func (s *SpoolOf[T]) Rewrite(keep []T) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, u := range keep {
		if err := enc.Encode(u); err != nil {
			return fmt.Errorf("%w: %w", ErrSpool, err)
		}
	}
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSpool, err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("%w: %s: %w", ErrSpool, s.path, err)
	}
	syncDir(filepath.Dir(s.path))
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.f
	s.f, s.lines = f, len(keep)
	if !s.syncing {
		old.Close() // else the fsync in flight closes it
	}
	s.releaseLocked()
	return nil
}

// syncDir makes a rename in dir durable, where the system allows.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Close closes the file, leaving its records for the next OpenSpool.
func (s *SpoolOf[T]) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.releaseLocked()
	if s.syncing {
		return nil // the fsync in flight closes it
	}
	return s.f.Close()
}

package certreload

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// CASettings configure CAs. File is required.
type CASettings struct {
	// File holds the certificate authorities in PEM.
	File string
	// Interval is the least time between two reads of the file, as
	// Settings.Interval. Default DefaultInterval.
	Interval time.Duration
	// Clock tells the time for Interval. Nil means the wall clock.
	Clock clock.Clock
	// OnChange, if set, is called once for each new content of the file
	// read: with the number of certificates now trusted when it loaded,
	// or with the error when it did not (the authorities in force stay).
	// It runs on the handshake's goroutine (or Check's caller), with no
	// lock held.
	OnChange func(certs int, err error)
}

// CAs are the certificate authorities of a PEM file (a listener's
// client_ca_file), read again when the file changes, at most once an
// interval, on the handshake that finds the interval over, or at once by
// Check (SIGHUP). A file that does not load leaves the authorities in
// force. It is safe for concurrent use.
type CAs struct {
	s   CASettings
	clk clock.Clock
	// cfg is the tls.Config handed to handshakes: base with the pool in
	// force, made again when the pool changes.
	cfg  atomic.Pointer[tls.Config]
	base *tls.Config

	mu   sync.Mutex // held by the one goroutine reading the file
	next time.Time  // guarded by mu
	seen []byte     // guarded by mu
}

// LoadCAs reads the file for the first time; an error says it is missing,
// unreadable or holds no certificate.
func LoadCAs(s CASettings) (*CAs, error) {
	if s.Interval <= 0 {
		s.Interval = DefaultInterval
	}
	c := &CAs{s: s, clk: clock.Or(s.Clock)}
	raw, pool, _, err := readCAs(s.File)
	if err != nil {
		return nil, err
	}
	c.seen = raw
	c.next = c.clk.Now().Add(s.Interval)
	c.cfg.Store(&tls.Config{ClientCAs: pool})
	return c, nil
}

// Pool is the authorities trusted now.
func (c *CAs) Pool() *x509.CertPool { return c.cfg.Load().ClientCAs }

// Serve sets base's ClientCAs to the authorities in force and its
// GetConfigForClient to give each handshake base with the authorities in
// force then (read again first when the interval is over). Call it once,
// before base is used; base must not set GetConfigForClient itself.
func (c *CAs) Serve(base *tls.Config) {
	c.base = base.Clone()
	c.cfg.Store(c.with(c.Pool()))
	base.ClientCAs = c.Pool()
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c.check(false)
		return c.cfg.Load(), nil
	}
}

// with is base with pool as its client CAs.
func (c *CAs) with(pool *x509.CertPool) *tls.Config {
	if c.base == nil {
		return &tls.Config{ClientCAs: pool}
	}
	cfg := c.base.Clone()
	cfg.ClientCAs = pool
	return cfg
}

// Check reads the file now, whatever the interval, and reports whether
// new authorities are trusted.
func (c *CAs) Check() bool { return c.check(true) }

func (c *CAs) check(wait bool) bool {
	if wait {
		c.mu.Lock()
	} else if !c.mu.TryLock() {
		return false
	}
	now := c.clk.Now()
	if !wait && now.Before(c.next) {
		c.mu.Unlock()
		return false
	}
	c.next = now.Add(c.s.Interval)
	raw, pool, n, err := readCAs(c.s.File)
	changed := raw != nil && !bytes.Equal(raw, c.seen)
	if changed {
		c.seen = raw
		if err == nil {
			c.cfg.Store(c.with(pool))
		}
	}
	c.mu.Unlock()
	if changed && c.s.OnChange != nil {
		c.s.OnChange(n, err)
	}
	return changed && err == nil
}

// readCAs reads file and the pool it holds (its PEM certificates that
// parse, as x509.CertPool.AppendCertsFromPEM takes them), and how many.
// raw is nil when the file cannot be read.
func readCAs(file string) (raw []byte, pool *x509.CertPool, n int, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, 0, &FileError{File: file, Err: err}
	}
	pool = x509.NewCertPool()
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if cert, err := x509.ParseCertificate(b.Bytes); err == nil {
			pool.AddCert(cert)
			n++
		}
	}
	if n == 0 {
		return data, nil, 0, fmt.Errorf("%s holds no PEM certificate that parses", file)
	}
	return data, pool, n, nil
}

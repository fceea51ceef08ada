// Package certreload serves a TLS certificate from a pair of PEM files
// and follows the files when they change, without a restart: a
// tls.Config's GetCertificate reads them again at most once an interval,
// on the handshake that finds the interval over, and a pair that does not
// load leaves the one in force serving.
package certreload

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchover-gw/switchover/clock"
)

// DefaultInterval is how often the files are read again when
// Settings.Interval is zero.
const DefaultInterval = 5 * time.Second

// Settings configure a Pair. CertFile and KeyFile are required.
type Settings struct {
	// CertFile holds the certificate in PEM, the leaf first, then any
	// intermediates; KeyFile its private key in PEM.
	CertFile, KeyFile string
	// Interval is the least time between two reads of the files: a
	// handshake after it has passed reads them (a few KiB) and compares
	// them with what was read last. Default DefaultInterval.
	Interval time.Duration
	// Clock tells the time for Interval. Nil means the wall clock.
	Clock clock.Clock
	// OnChange, if set, is called once for each new content of the files
	// read: with nil and the certificate now served when it loaded, or
	// with the error when it did not (the certificate in force stays).
	// Content that does not change is not reported again. It runs on the
	// handshake's goroutine (or Check's caller), with no lock held.
	OnChange func(cert *tls.Certificate, err error)
}

// Pair is a certificate and key read from files, read again when they
// change. It is safe for concurrent use.
type Pair struct {
	s   Settings
	clk clock.Clock
	cur atomic.Pointer[tls.Certificate]

	// mu is held by the one goroutine reading the files; the others
	// serve the certificate in force meanwhile.
	mu sync.Mutex
	// next is when the files are read again; seen is what they held
	// when last read, loaded or not. Guarded by mu.
	next time.Time
	seen []byte
}

// Load reads the pair for the first time; an error says which file is
// missing, unreadable or not a certificate or key, or that they do not
// belong together.
func Load(s Settings) (*Pair, error) {
	if s.Interval <= 0 {
		s.Interval = DefaultInterval
	}
	p := &Pair{s: s, clk: clock.Or(s.Clock)}
	raw, cert, err := read(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, err
	}
	p.cur.Store(cert)
	p.seen = raw
	p.next = p.clk.Now().Add(s.Interval)
	return p, nil
}

// Certificate is the certificate served now.
func (p *Pair) Certificate() *tls.Certificate { return p.cur.Load() }

// GetCertificate is for tls.Config.GetCertificate: the certificate in
// force, read again from the files first when the interval is over.
func (p *Pair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	p.check(false)
	return p.cur.Load(), nil
}

// Check reads the files now (as on SIGHUP), whatever the interval, and
// reports whether a new certificate is served.
func (p *Pair) Check() bool { return p.check(true) }

// check reads the files unless another goroutine is (or, when wait, after
// it has), and loads what changed.
func (p *Pair) check(wait bool) bool {
	if wait {
		p.mu.Lock()
	} else if !p.mu.TryLock() {
		return false
	}
	now := p.clk.Now()
	if !wait && now.Before(p.next) {
		p.mu.Unlock()
		return false
	}
	p.next = now.Add(p.s.Interval)
	raw, cert, err := read(p.s.CertFile, p.s.KeyFile)
	changed := raw != nil && !bytes.Equal(raw, p.seen)
	if changed {
		p.seen = raw
		if err == nil {
			p.cur.Store(cert)
		}
	}
	p.mu.Unlock()
	// A file that cannot be read (in the middle of a replacement, or
	// gone) is read again at the next interval and reported only as
	// content: what the files held last loaded or was reported.
	if changed && p.s.OnChange != nil {
		if err != nil {
			cert = nil
		}
		p.s.OnChange(cert, err)
	}
	return changed && err == nil
}

// read reads the files and the pair they hold. raw is both files'
// content, nil when either cannot be read.
func read(certFile, keyFile string) (raw []byte, cert *tls.Certificate, err error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, &FileError{File: certFile, Err: err}
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, &FileError{File: keyFile, Key: true, Err: err}
	}
	raw = append(append(append([]byte{}, certPEM...), 0), keyPEM...)
	c, err := Parse(certPEM, keyPEM)
	if err != nil {
		var fe *FileError
		if errors.As(err, &fe) {
			fe.File = certFile
			if fe.Key {
				fe.File = keyFile
			}
		}
		return raw, nil, err
	}
	return raw, c, nil
}

// FileError is a problem with one of the files: Key says whether the key
// file (else the certificate file). Mismatch says the two do not belong
// together (reported against the key file).
type FileError struct {
	File     string
	Key      bool
	Mismatch bool
	Err      error
}

func (e *FileError) Error() string {
	if e.File == "" {
		return e.Err.Error()
	}
	return e.File + ": " + e.Err.Error()
}

func (e *FileError) Unwrap() error { return e.Err }

// Parse checks a certificate and key in PEM and returns the pair, its
// Leaf parsed: the certificate file must hold a certificate first, the
// key file a private key that matches it.
func Parse(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	if err := firstCertificate(certPEM); err != nil {
		return nil, &FileError{Err: err}
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The certificate parsed: what is wrong is the key, or the pair.
		if perr := parseKey(keyPEM); perr != nil {
			return nil, &FileError{Key: true, Err: perr}
		}
		return nil, &FileError{Key: true, Mismatch: true, Err: errors.New("the private key does not match the certificate's public key")}
	}
	return &c, nil
}

// firstCertificate checks that data holds a certificate, first, that
// parses.
func firstCertificate(data []byte) error {
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return errors.New("holds no PEM certificate (a -----BEGIN CERTIFICATE----- block)")
		}
		switch {
		case b.Type == "CERTIFICATE":
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return fmt.Errorf("its certificate does not parse: %w", err)
			}
			return nil
		case strings.HasSuffix(b.Type, "PRIVATE KEY"):
			return errors.New("holds a private key before any certificate (cert_file and key_file swapped?)")
		}
	}
}

// parseKey checks that data holds a private key that parses (PKCS #8,
// PKCS #1 or SEC 1).
func parseKey(data []byte) error {
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return errors.New("holds no PEM private key (a -----BEGIN PRIVATE KEY----- block)")
		}
		if !strings.HasSuffix(b.Type, "PRIVATE KEY") {
			continue
		}
		if _, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
			return nil
		}
		if _, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
			return nil
		}
		if _, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
			return nil
		}
		return errors.New("its private key does not parse (PKCS #8, PKCS #1 or SEC 1 expected; an encrypted key is not supported)")
	}
}

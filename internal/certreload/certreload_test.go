package certreload

import (
	"crypto/tls"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/testpki"
)

type change struct {
	cn  string
	err error
}

// pairFiles writes a certificate named cn and its key to dir and returns
// their paths.
func pairFiles(t *testing.T, ca *testpki.CA, dir, cn string) (string, string) {
	c, k := ca.Server(t, cn, "localhost")
	return testpki.Write(t, dir, "tls.crt", c), testpki.Write(t, dir, "tls.key", k)
}

func served(t *testing.T, p *Pair) string {
	t.Helper()
	c, err := p.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || c == nil {
		t.Fatalf("GetCertificate: %v, %v", c, err)
	}
	return c.Leaf.Subject.CommonName
}

// TestPairFollowsTheFiles: a new pair is served at the first handshake
// once the interval is over (not before); a pair that does not load
// leaves the one in force, reported once; content that comes back the
// same is not reported again.
func TestPairFollowsTheFiles(t *testing.T) {
	ca := testpki.NewCA(t, "test CA")
	dir := t.TempDir()
	certFile, keyFile := pairFiles(t, ca, dir, "first")
	clk := fakeclock.New()
	var changes []change
	p, err := Load(Settings{CertFile: certFile, KeyFile: keyFile, Interval: 5 * time.Second, Clock: clk,
		OnChange: func(c *tls.Certificate, err error) {
			ch := change{err: err}
			if c != nil {
				ch.cn = c.Leaf.Subject.CommonName
			}
			changes = append(changes, ch)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got := served(t, p); got != "first" {
		t.Fatalf("served %q", got)
	}

	pairFiles(t, ca, dir, "second")
	clk.Advance(4 * time.Second)
	if got := served(t, p); got != "first" {
		t.Fatalf("served %q before the interval is over", got)
	}
	clk.Advance(time.Second)
	if got := served(t, p); got != "second" {
		t.Fatalf("served %q once the interval is over, want second", got)
	}

	// A key of another certificate: the pair in force stays, reported once.
	_, otherKey := ca.Server(t, "other", "localhost")
	testpki.Write(t, dir, "tls.key", otherKey)
	for range 3 {
		clk.Advance(5 * time.Second)
		if got := served(t, p); got != "second" {
			t.Fatalf("served %q after a bad pair, want second still", got)
		}
	}
	// A file being replaced (gone for a moment) is not reported.
	os.Remove(keyFile)
	clk.Advance(5 * time.Second)
	served(t, p)

	pairFiles(t, ca, dir, "third")
	clk.Advance(5 * time.Second)
	if got := served(t, p); got != "third" {
		t.Fatalf("served %q, want third", got)
	}
	if len(changes) != 3 || changes[0].cn != "second" || changes[1].err == nil || changes[2].cn != "third" {
		t.Fatalf("changes %+v, want second, one error, third", changes)
	}
	var fe *FileError
	if !errors.As(changes[1].err, &fe) || !fe.Mismatch || fe.File != keyFile {
		t.Fatalf("error %v, want a mismatch on the key file", changes[1].err)
	}

	// Check reads at once, whatever the interval.
	pairFiles(t, ca, dir, "fourth")
	if !p.Check() || served(t, p) != "fourth" {
		t.Fatal("Check did not load the new pair")
	}
	if p.Check() {
		t.Fatal("Check reported a change of files that did not change")
	}
}

// TestLoadErrors: each file's problem is named on its file.
func TestLoadErrors(t *testing.T) {
	ca := testpki.NewCA(t, "test CA")
	dir := t.TempDir()
	certPEM, keyPEM := ca.Server(t, "gw", "localhost")
	_, otherKey := ca.Server(t, "other", "localhost")
	certFile := testpki.Write(t, dir, "ok.crt", certPEM)
	keyFile := testpki.Write(t, dir, "ok.key", keyPEM)
	otherKeyFile := testpki.Write(t, dir, "other.key", otherKey)
	garbage := testpki.Write(t, dir, "garbage", []byte("not pem\n"))
	for _, tc := range []struct {
		name, cert, key string
		wantFile        string
		wantKey         bool
		want            string
	}{
		{"missing certificate", filepath.Join(dir, "nope.crt"), keyFile, filepath.Join(dir, "nope.crt"), false, "no such file"},
		{"missing key", certFile, filepath.Join(dir, "nope.key"), filepath.Join(dir, "nope.key"), true, "no such file"},
		{"certificate not PEM", garbage, keyFile, garbage, false, "holds no PEM certificate"},
		{"files swapped", keyFile, certFile, keyFile, false, "swapped"},
		{"key not PEM", certFile, garbage, garbage, true, "holds no PEM private key"},
		{"key of another certificate", certFile, otherKeyFile, otherKeyFile, true, "does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(Settings{CertFile: tc.cert, KeyFile: tc.key})
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != tc.wantFile || fe.Key != tc.wantKey || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (%+v), want on %s (key %v) %q", err, fe, tc.wantFile, tc.wantKey, tc.want)
			}
			if strings.Contains(tc.want, "no such file") && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("error %v is not fs.ErrNotExist", err)
			}
		})
	}
}

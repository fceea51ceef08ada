package certreload_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchover-gw/switchover/internal/certreload"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/testpki"
)

// TestCAsFollowTheFile: the authorities are read again at the first
// handshake after the interval, at once by Check, and a file that does
// not load is reported once and leaves the authorities in force; each
// handshake's config is the base's with the pool in force.
func TestCAsFollowTheFile(t *testing.T) {
	dir := t.TempDir()
	one, two := testpki.NewCA(t, "one"), testpki.NewCA(t, "two")
	file := testpki.Write(t, dir, "ca.crt", one.PEM)
	clk := fakeclock.New()
	var reports []string
	cas, err := certreload.LoadCAs(certreload.CASettings{File: file, Clock: clk, OnChange: func(n int, err error) {
		if err != nil {
			reports = append(reports, "error")
			return
		}
		reports = append(reports, "ok")
	}})
	if err != nil {
		t.Fatal(err)
	}
	base := &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{"h2", "http/1.1"}}
	cas.Serve(base)
	handshake := func() *tls.Config {
		c, err := base.GetConfigForClient(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := handshake(); !c.ClientCAs.Equal(one.Pool()) || c.MinVersion != tls.VersionTLS13 || len(c.NextProtos) != 2 || c.GetConfigForClient != nil {
		t.Fatalf("first handshake's config: %+v", c)
	}
	testpki.Write(t, dir, "ca.crt", two.PEM)
	if c := handshake(); !c.ClientCAs.Equal(one.Pool()) {
		t.Fatal("the file was read again before the interval")
	}
	clk.Advance(certreload.DefaultInterval)
	if c := handshake(); !c.ClientCAs.Equal(two.Pool()) {
		t.Fatal("the new authorities not trusted after the interval")
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cas.Check() {
		t.Error("Check reported a file of no certificate as loaded")
	}
	clk.Advance(certreload.DefaultInterval)
	if c := handshake(); !c.ClientCAs.Equal(two.Pool()) {
		t.Fatal("a bad file replaced the authorities in force")
	}
	testpki.Write(t, dir, "ca.crt", one.PEM)
	if !cas.Check() || !cas.Pool().Equal(one.Pool()) {
		t.Fatal("Check did not load the file at once")
	}
	if got := len(reports); got != 3 || reports[1] != "error" {
		t.Errorf("reports %v, want ok, error, ok", reports)
	}
	if _, err := certreload.LoadCAs(certreload.CASettings{File: filepath.Join(dir, "none.crt")}); err == nil {
		t.Error("a missing file loaded")
	}
}

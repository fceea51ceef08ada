package config

import (
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// validateCAFile checks a backend's ca_file at path p: an https backend's,
// a readable PEM file of at least one certificate.
func (b Backend) validateCAFile(ps *Problems, p string) {
	if b.CAFile == "" {
		return
	}
	if !strings.HasPrefix(b.URL, "https://") {
		ps.add(p+".ca_file", "only for https backends (url %q)", b.URL)
		return
	}
	if _, err := LoadCAFile(b.CAFile); err != nil {
		ps.add(p+".ca_file", "%v", err)
	}
}

// LoadCAFile reads a PEM file of certificate authorities (a backend's
// ca_file) into a pool.
func LoadCAFile(name string) (*x509.CertPool, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", name)
	}
	return pool, nil
}

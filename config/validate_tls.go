package config

import (
	"crypto/x509"
	"errors"
	"os"

	"github.com/switchover-gw/switchover/internal/certreload"
)

// validateTLS checks the listeners' TLS: server.tls, server.metrics_tls,
// admin.tls, and the HTTP/2 switches of the API listener.
func (c *Config) validateTLS(ps *Problems) {
	c.Server.TLS.validate(ps, "server.tls")
	if c.Server.MetricsTLS != nil && c.Server.MetricsListen == "" {
		ps.add("server.metrics_tls", "there is no metrics_listen to serve over TLS; set metrics_listen, or remove metrics_tls")
	} else {
		c.Server.MetricsTLS.validate(ps, "server.metrics_tls")
	}
	if c.Admin != nil {
		c.Admin.TLS.validate(ps, "admin.tls")
	}
	switch {
	case c.Server.H2C && c.Server.TLS != nil:
		ps.add("server.h2c", "h2c is cleartext HTTP/2; with server.tls, TLS clients get HTTP/2 by ALPN (server.http2): remove h2c")
	case c.Server.H2C && c.Server.HTTP2 != nil && !*c.Server.HTTP2:
		ps.add("server.h2c", "http2 is false, so no HTTP/2 is served: remove h2c, or http2: false")
	}
}

// validate checks t, at path p: both files given, readable and a pair;
// the client CA file readable and holding certificates; the modes known.
// Nothing when t is nil.
func (t *TLS) validate(ps *Problems, p string) {
	if t == nil {
		return
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
		ps.add(p, "cert_file and key_file are required")
	case t.CertFile == "":
		ps.add(p+".cert_file", "is required with key_file")
	case t.KeyFile == "":
		ps.add(p+".key_file", "is required with cert_file")
	default:
		checkPair(ps, p, t.CertFile, t.KeyFile)
	}
	if t.ClientCAFile != "" {
		checkClientCA(ps, p+".client_ca_file", t.ClientCAFile)
	}
	switch t.ClientAuth {
	case ClientAuthNone:
		if t.ClientCAFile != "" {
			ps.add(p+".client_auth", "is none, so client_ca_file is unused; set request or require, or remove client_ca_file")
		}
	case ClientAuthRequest, ClientAuthRequire:
		if t.ClientCAFile == "" {
			ps.add(p+".client_auth", "%s needs client_ca_file: the CAs a client certificate must come from", t.ClientAuth)
		}
	default:
		ps.add(p+".client_auth", "must be none, request or require, not %q", t.ClientAuth)
	}
	if t.MinVersion != "1.2" && t.MinVersion != "1.3" {
		ps.add(p+".min_version", "must be \"1.2\" or \"1.3\", not %q", t.MinVersion)
	}
}

// checkPair reads the certificate and key files and reports, on the line
// of the file at fault, what keeps them from serving.
func checkPair(ps *Problems, p, certFile, keyFile string) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		ps.add(p+".cert_file", "%v", err)
	}
	keyPEM, kerr := os.ReadFile(keyFile)
	if kerr != nil {
		ps.add(p+".key_file", "%v", kerr)
	}
	if err != nil || kerr != nil {
		return
	}
	if _, err := certreload.Parse(certPEM, keyPEM); err != nil {
		var fe *certreload.FileError
		switch {
		case errors.As(err, &fe) && fe.Mismatch:
			ps.add(p+".key_file", "%s is not the key of %s: %v", keyFile, certFile, fe.Err)
		case errors.As(err, &fe) && fe.Key:
			ps.add(p+".key_file", "%s: %v", keyFile, fe.Err)
		case errors.As(err, &fe):
			ps.add(p+".cert_file", "%s: %v", certFile, fe.Err)
		default:
			ps.add(p, "%v", err)
		}
	}
}

// checkClientCA reads a client CA file: it must hold a certificate.
func checkClientCA(ps *Problems, p, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		ps.add(p, "%v", err)
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		ps.add(p, "%s holds no PEM certificate that parses", file)
	}
}

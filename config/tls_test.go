package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/testpki"
)

// tlsFiles writes a CA, a server pair, a key of another pair and a
// file that is not PEM to a directory, returned with the variables a
// configuration names them by.
func tlsFiles(t *testing.T) Env {
	dir := t.TempDir()
	ca := testpki.NewCA(t, "test CA")
	certPEM, keyPEM := ca.Server(t, "gw", "localhost")
	_, otherKey := ca.Server(t, "other", "localhost")
	vars := map[string]string{
		"CERT":  testpki.Write(t, dir, "tls.crt", certPEM),
		"KEY":   testpki.Write(t, dir, "tls.key", keyPEM),
		"OTHER": testpki.Write(t, dir, "other.key", otherKey),
		"CA":    testpki.Write(t, dir, "ca.crt", ca.PEM),
		"JUNK":  testpki.Write(t, dir, "junk.txt", []byte("not a certificate\n")),
		"NONE":  filepath.Join(dir, "missing.pem"),
	}
	// A directory: no file of that name can be read (as root, a file
	// without permissions still can).
	vars["UNREADABLE"] = filepath.Join(dir, "unreadable.key")
	if err := os.Mkdir(vars["UNREADABLE"], 0o700); err != nil {
		t.Fatal(err)
	}
	return testEnv(vars)
}

// TestTLSCheckedAtLoad: every problem of a listener's TLS is reported on
// the line at fault, with the file named.
func TestTLSCheckedAtLoad(t *testing.T) {
	env := tlsFiles(t)
	head := "listen: 127.0.0.1:0\nbackends:\n  - {name: b, type: openai_compatible, url: \"http://127.0.0.1:1\"}\npools:\n  - {name: p, members: [{backend: b}]}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string // each a problem's text, after "tls.yaml:"
	}{
		{"good", "server:\n  tls:\n    cert_file: ${CERT}\n    key_file: ${KEY}\n", nil},
		{"good with mTLS everywhere", "server:\n  metrics_listen: 127.0.0.1:0\n  tls: {cert_file: \"${CERT}\", key_file: \"${KEY}\", client_ca_file: \"${CA}\"}\n  metrics_tls: {cert_file: \"${CERT}\", key_file: \"${KEY}\", client_ca_file: \"${CA}\", client_auth: request, min_version: \"1.3\"}\nadmin:\n  allow_no_key: true\n  tls: {cert_file: \"${CERT}\", key_file: \"${KEY}\", client_ca_file: \"${CA}\"}\n", nil},
		{"good h2c", "server:\n  h2c: true\n", nil},
		{"no files", "server:\n  tls: {}\n", []string{"7: server.tls: cert_file and key_file are required"}},
		{"no key", "server:\n  tls:\n    cert_file: ${CERT}\n", []string{"8: server.tls.key_file: is required with cert_file"}},
		{"missing certificate", "server:\n  tls:\n    cert_file: ${NONE}\n    key_file: ${KEY}\n", []string{"8: server.tls.cert_file: open ", "missing.pem: no such file or directory"}},
		{"unreadable key", "server:\n  tls:\n    cert_file: ${CERT}\n    key_file: ${UNREADABLE}\n", []string{"9: server.tls.key_file: read ", "unreadable.key: is a directory"}},
		{"certificate not PEM", "server:\n  tls:\n    cert_file: ${JUNK}\n    key_file: ${KEY}\n", []string{"8: server.tls.cert_file: ", "junk.txt: holds no PEM certificate"}},
		{"files swapped", "server:\n  tls:\n    cert_file: ${KEY}\n    key_file: ${CERT}\n", []string{"8: server.tls.cert_file: ", "swapped"}},
		{"key of another certificate", "server:\n  tls:\n    cert_file: ${CERT}\n    key_file: ${OTHER}\n", []string{"9: server.tls.key_file: ", "other.key is not the key of ", "does not match the certificate's public key"}},
		{"client CA not PEM", "server:\n  tls:\n    cert_file: ${CERT}\n    key_file: ${KEY}\n    client_ca_file: ${JUNK}\n", []string{"10: server.tls.client_ca_file: ", "junk.txt holds no PEM certificate"}},
		{"client auth without a CA", "server:\n  tls:\n    cert_file: ${CERT}\n    key_file: ${KEY}\n    client_auth: require\n", []string{"10: server.tls.client_auth: require needs client_ca_file"}},
		{"a CA unused", "server:\n  tls:\n    cert_file: ${CERT}\n    key_file: ${KEY}\n    client_ca_file: ${CA}\n    client_auth: none\n", []string{"11: server.tls.client_auth: is none, so client_ca_file is unused"}},
		{"unknown client auth", "server:\n  tls:\n    cert_file: ${CERT}\n    key_file: ${KEY}\n    client_ca_file: ${CA}\n    client_auth: optional\n", []string{"11: server.tls.client_auth: must be none, request or require, not \"optional\""}},
		{"old TLS", "server:\n  tls:\n    cert_file: ${CERT}\n    key_file: ${KEY}\n    min_version: \"1.0\"\n", []string{"10: server.tls.min_version: must be \"1.2\" or \"1.3\""}},
		{"h2c with tls", "server:\n  tls: {cert_file: \"${CERT}\", key_file: \"${KEY}\"}\n  h2c: true\n", []string{"8: server.h2c: h2c is cleartext HTTP/2"}},
		{"h2c without http2", "server:\n  http2: false\n  h2c: true\n", []string{"8: server.h2c: http2 is false"}},
		{"metrics tls without its listener", "server:\n  metrics_tls: {cert_file: \"${CERT}\", key_file: \"${KEY}\"}\n", []string{"7: server.metrics_tls: there is no metrics_listen"}},
		{"admin key missing", "admin:\n  allow_no_key: true\n  tls:\n    cert_file: ${CERT}\n    key_file: ${NONE}\n", []string{"10: admin.tls.key_file: open "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("tls.yaml", []byte(head+tc.yaml), env)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected problems:\n%v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no problem reported")
			}
			got := err.Error()
			if strings.Count(got, "\n") != 0 {
				t.Errorf("more than one problem:\n%s", got)
			}
			if !strings.HasPrefix(got, "tls.yaml:"+tc.want[0]) {
				t.Errorf("problem %q, want it to start with tls.yaml:%s", got, tc.want[0])
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(got, w) {
					t.Errorf("problem %q does not say %q", got, w)
				}
			}
		})
	}
}

// TestTLSDefaults: a client CA makes client_auth require; TLS 1.2 is
// the least version; HTTP/2 is on.
func TestTLSDefaults(t *testing.T) {
	env := tlsFiles(t)
	y := "backends:\n  - {name: b, type: openai_compatible, url: \"http://127.0.0.1:1\"}\npools:\n  - {name: p, members: [{backend: b}]}\n" +
		"server:\n  tls: {cert_file: \"${CERT}\", key_file: \"${KEY}\", client_ca_file: \"${CA}\"}\nadmin:\n  allow_no_key: true\n  tls: {cert_file: \"${CERT}\", key_file: \"${KEY}\"}\n"
	c, err := Parse("tls.yaml", []byte(y), env)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Server; s.TLS.ClientAuth != ClientAuthRequire || s.TLS.MinVersion != "1.2" || !*s.HTTP2 || s.H2C {
		t.Fatalf("server %+v, tls %+v", s, s.TLS)
	}
	if a := c.Admin.TLS; a.ClientAuth != ClientAuthNone || a.MinVersion != "1.2" {
		t.Fatalf("admin tls %+v", a)
	}
}

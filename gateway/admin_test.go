package gateway_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAdminRefusesWhatAWebPageCouldSend is the regression test for the
// admin API taking cross-site requests: a page could POST a drain as
// text/plain, and any Host was accepted, so DNS rebinding could read
// /admin/status.
func TestAdminRefusesWhatAWebPageCouldSend(t *testing.T) {
	h := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+", allowed_hosts: [ops.internal, \"gw.example:9000\"]}\nkeys:", 1)
	})
	self := strings.TrimPrefix(h.admin, "http://")
	_, port, _ := net.SplitHostPort(self)
	tests := []struct {
		name, method, path  string
		host, origin, ctype string
		key                 string
		want                int
	}{
		{"status", "GET", "/admin/status", "", "", "", adminKey, 200},
		{"localhost", "GET", "/admin/status", "localhost:" + port, "", "", adminKey, 200},
		{"allowed host", "GET", "/admin/status", "ops.internal:" + port, "", "", adminKey, 200},
		{"allowed host and port", "GET", "/admin/status", "gw.example:9000", "", "", adminKey, 200},
		{"allowed host on another port", "GET", "/admin/status", "gw.example:9001", "", "", adminKey, 403},
		{"rebound host", "GET", "/admin/status", "evil.example:" + port, "", "", adminKey, 403},
		{"no host", "GET", "/admin/status", "-", "", "", adminKey, 403},
		{"cross-site origin", "POST", "/admin/backends/aoai-westeurope/restore", "", "http://evil.example", "application/json", adminKey, 403},
		{"null origin", "GET", "/admin/status", "", "null", "", adminKey, 403},
		{"same origin", "POST", "/admin/backends/aoai-westeurope/restore", "", h.admin, "application/json", adminKey, 200},
		{"text/plain post", "POST", "/admin/backends/aoai-westeurope/drain", "", "", "text/plain", adminKey, 415},
		{"form post", "POST", "/admin/backends/aoai-westeurope/drain", "", "", "application/x-www-form-urlencoded", adminKey, 415},
		{"post without type", "POST", "/admin/backends/aoai-westeurope/drain", "", "", "", adminKey, 415},
		{"json with charset", "POST", "/admin/backends/aoai-westeurope/restore", "", "", "application/json; charset=utf-8", adminKey, 200},
		{"no key", "GET", "/admin/status", "", "", "", "", 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, h.admin+tc.path, nil)
			switch tc.host {
			case "":
			case "-":
				req.Host = " "
			default:
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if b := h.gw.Backend("aoai-westeurope"); b.Drained() {
		t.Fatal("a refused request drained the backend")
	}
}

// TestAdminWithoutKeyNeedsAllowNoKey: an admin API with no key serves only
// when allow_no_key says so (on loopback; the config refuses it elsewhere).
func TestAdminWithoutKeyNeedsAllowNoKey(t *testing.T) {
	h := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, allow_no_key: true}\nkeys:", 1)
	})
	if code, _ := h.adminDo("GET", "/admin/status", "", ""); code != 200 {
		t.Fatalf("status without key: %d", code)
	}
	if code, _ := h.adminDo("POST", "/admin/backends/aoai-westeurope/drain", "", ""); code != 200 {
		t.Fatalf("drain without key: %d", code)
	}
}

// TestAdminServerHasReadTimeouts is the regression test for the admin
// server having no read or idle timeout: a client that never finishes its
// headers is cut off after read_header_timeout.
func TestAdminServerHasReadTimeouts(t *testing.T) {
	h := startAnswering(t, func(y string) string {
		y = strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+"}\nkeys:", 1)
		return strings.Replace(y, "shutdown_grace: 5s", "shutdown_grace: 5s, read_header_timeout: 50ms", 1)
	})
	c, err := net.Dial("tcp", strings.TrimPrefix(h.admin, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET /admin/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")) // and never the end
	c.SetReadDeadline(time.Now().Add(5 * time.Second))                   // a bound, not a timing assertion
	var buf [512]byte
	for {
		if _, err := c.Read(buf[:]); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the admin server kept a connection whose headers never came")
			}
			return // closed by the server
		}
	}
}

// TestAdminErrorsHaveOneShape: every admin route answers an error as
// {"error":{"message":"…"}}, the status and action routes as the keys
// routes do (they answered {"error":"…"} before).
func TestAdminErrorsHaveOneShape(t *testing.T) {
	h := startAnswering(t, func(y string) string {
		return strings.Replace(y, "keys:", "admin: {listen: 127.0.0.1:0, key: "+adminKey+"}\nkeys:", 1)
	})
	for _, c := range []struct {
		method, path string
		key          string
		want         int
	}{
		{"POST", "/admin/backends/nope/drain", adminKey, http.StatusNotFound},
		{"GET", "/admin/status", "wrong", http.StatusUnauthorized},
		{"GET", "/admin/keys", adminKey, http.StatusConflict},
	} {
		req, _ := http.NewRequest(c.method, h.admin+c.path, strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+c.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != c.want || err != nil || body.Error.Message == "" {
			t.Errorf("%s %s: %d, %v, message %q", c.method, c.path, resp.StatusCode, err, body.Error.Message)
		}
	}
}

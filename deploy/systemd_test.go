package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
)

const (
	unitFile = "systemd/switchover.service"
	// haltWait is the gateway's last shutdown step (gateway.haltWait).
	haltWait = 2 * time.Second
)

// unit is a systemd unit file: section -> directive -> values, in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	var section string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a directive: %q", path, n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// last is the directive's effective value (the last assignment).
func (u unit) last(section, key string) string {
	vs := u[section][key]
	if len(vs) == 0 {
		return "\x00unset"
	}
	return vs[len(vs)-1]
}

// systemdSeconds parses a plain TimeoutStopSec: "45", "45s", "1min 30s".
func systemdSeconds(t *testing.T, v string) time.Duration {
	t.Helper()
	var total time.Duration
	for _, f := range strings.Fields(v) {
		m := regexp.MustCompile(`^(\d+)(s|sec|min|m)?$`).FindStringSubmatch(f)
		if m == nil {
			t.Fatalf("TimeoutStopSec %q: cannot read %q", v, f)
		}
		n, _ := strconv.Atoi(m[1])
		unit := time.Second
		if m[2] == "min" || m[2] == "m" {
			unit = time.Minute
		}
		total += time.Duration(n) * unit
	}
	return total
}

func TestSystemdUnit(t *testing.T) {
	u := parseUnit(t, unitFile)
	want := map[string]string{
		"Type":                    "simple", // the gateway has no sd_notify
		"KillSignal":              "SIGTERM",
		"Restart":                 "on-failure",
		"DynamicUser":             "yes",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectKernelLogs":       "yes",
		"ProtectControlGroups":    "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"MemoryDenyWriteExecute":  "yes",
		"LockPersonality":         "yes",
		"RestrictNamespaces":      "yes",
		"RestrictSUIDSGID":        "yes",
		"SystemCallArchitectures": "native",
		"StateDirectory":          "switchover",
		// The exit codes for bad flags and an invalid configuration.
		"RestartPreventExitStatus": "2 3",
		"ExecReload":               "/bin/kill -HUP $MAINPID",
	}
	for k, v := range want {
		if got := u.last("Service", k); got != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	if got := u["Service"]["SystemCallFilter"]; !slices.Contains(got, "@system-service") || !slices.Contains(got, "~@privileged @resources") {
		t.Errorf("SystemCallFilter %q, want @system-service less ~@privileged @resources", got)
	}
	if got := u.last("Service", "ExecStart"); got != "/usr/local/bin/switchover serve -c /etc/switchover/switchover.yaml" {
		t.Errorf("ExecStart=%s", got)
	}
	if got := u.last("Service", "EnvironmentFile"); !strings.HasPrefix(strings.TrimPrefix(got, "-"), "/etc/switchover/") {
		t.Errorf("EnvironmentFile=%s, want the secrets under /etc/switchover", got)
	}
	if got := u.last("Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("WantedBy=%s", got)
	}

	// The stop timeout covers the gateway's default shutdown.
	cfg, err := config.Parse("min.yaml", []byte("backends: [{name: a, type: openai_compatible, url: \"http://127.0.0.1:1\"}]\npools: [{name: p, members: [{backend: a}]}]\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	drain, grace := cfg.Server.DrainDelay.D(), cfg.Server.ShutdownGrace.D()
	if stop := systemdSeconds(t, u.last("Service", "TimeoutStopSec")); stop <= drain+grace+haltWait {
		t.Errorf("TimeoutStopSec %v, want above drain_delay %v + shutdown_grace %v + %v (the defaults)", stop, drain, grace, haltWait)
	}
}

// TestSystemdAnalyze has systemd check the unit and rate its sandbox,
// where systemd-analyze is installed.
func TestSystemdAnalyze(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed; the unit is checked by TestSystemdUnit only")
	}
	// verify wants the binaries to exist: point them at this test binary.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "switchover.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), "/usr/local/bin/switchover", self)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command("systemd-analyze", "security", "--offline=true", path).CombinedOutput()
	if err != nil {
		t.Skipf("systemd-analyze security --offline (systemd 250 or later): %v", err)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Errorf("exposure level %.1f, want 2.0 or less:\n%s", level, out)
	}
}

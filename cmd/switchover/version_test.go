package main

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestReadBuildInfo(t *testing.T) {
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name           string
		ldVersion      string
		ldCommit       string
		bi             *debug.BuildInfo
		ok             bool
		version        string
		commit         string
		buildTime, goV string
	}{
		{"no build info", "dev", "", nil, false, "dev", "", "", runtime.Version()},
		{"clean checkout", "dev", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: settings("vcs.revision", rev, "vcs.time", "2026-12-01T10:00:00Z", "vcs.modified", "false")},
			true, "dev", "0123456789ab", "2026-12-01T10:00:00Z", "go1.26.8"},
		{"dirty checkout", "dev", "", &debug.BuildInfo{Settings: settings("vcs.revision", rev, "vcs.modified", "true")},
			true, "dev", "0123456789ab-dirty", "", runtime.Version()},
		{"ldflags version wins over the module's", "v1.2.3", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}},
			true, "v1.2.3", "", "", runtime.Version()},
		{"go install of a tagged module", "dev", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}},
			true, "v0.9.0", "", "", runtime.Version()},
		{"ldflags commit wins over vcs.revision", "v1.2.3", "abc1234", &debug.BuildInfo{Settings: settings("vcs.revision", rev)},
			true, "v1.2.3", "abc1234", "", runtime.Version()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldV, oldC := version, commit
			version, commit = tc.ldVersion, tc.ldCommit
			t.Cleanup(func() { version, commit = oldV, oldC })
			got := readBuildInfo(tc.bi, tc.ok)
			want := buildInfo{Version: tc.version, Commit: tc.commit, BuildTime: tc.buildTime, Go: tc.goV, OS: runtime.GOOS, Arch: runtime.GOARCH}
			if got != want {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	code, out, _ := run2(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "switchover dev") || !strings.Contains(out, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	code, out, _ = run2(t, "version", "-json")
	var info buildInfo
	if err := json.Unmarshal([]byte(out), &info); code != exitOK || err != nil {
		t.Fatalf("version -json: exit %d, %v: %q", code, err, out)
	}
	if info.Version != "dev" || info.Go == "" || info.OS != runtime.GOOS || info.Arch != runtime.GOARCH {
		t.Fatalf("version -json: %+v", info)
	}
	if code, _, _ := run2(t, "version", "extra"); code != exitUsage {
		t.Fatalf("version extra: exit %d, want %d", code, exitUsage)
	}
}

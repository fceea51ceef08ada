package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// commit is set at build time with -ldflags "-X main.commit=…" where the
// build has no VCS information (a Docker build without .git, or
// -buildvcs=false); otherwise vcs.revision from the build info is used.
var commit = ""

// buildInfo is what switchover version prints.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	BuildTime string `json:"build_time,omitempty"`
	Go        string `json:"go"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// readBuildInfo combines the -ldflags values with what the Go toolchain
// recorded: the -ldflags version wins over the module version, a short
// vcs.revision (with "-dirty" when vcs.modified) is the commit, vcs.time
// the build time.
func readBuildInfo(bi *debug.BuildInfo, ok bool) buildInfo {
	info := buildInfo{Version: version, Commit: commit, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if !ok || bi == nil {
		return info
	}
	if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		info.Go = bi.GoVersion
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			info.BuildTime = s.Value
		}
	}
	if info.Commit == "" && rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if modified == "true" {
			rev += "-dirty"
		}
		info.Commit = rev
	}
	return info
}

func (b buildInfo) String() string {
	s := "switchover " + b.Version
	if b.Commit != "" {
		s += " commit " + b.Commit
	}
	if b.BuildTime != "" {
		s += " built " + b.BuildTime
	}
	return s + fmt.Sprintf(" %s %s/%s", b.Go, b.OS, b.Arch)
}

func versionCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the build information as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("version takes no arguments, got %q", fs.Args())}
	}
	info := readBuildInfo(debug.ReadBuildInfo())
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	_, err := fmt.Fprintln(stdout, info)
	return err
}

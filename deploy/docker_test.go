package deploy

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const (
	dockerfile  = "../Dockerfile"
	buildScript = "../scripts/build-static.sh"
	// ciBinaryEnv names a binary scripts/build-static.sh already built
	// (.ci/run sets it), so that CI builds the image's binary once.
	ciBinaryEnv = "SWITCHOVER_STATIC_BINARY"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case
	args string
}

func parseDockerfile(t *testing.T) []instruction {
	t.Helper()
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// goDirective is go.mod's go version.
func goDirective(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return string(m[1])
}

// TestDockerfile checks the image the Dockerfile describes, since no
// Docker engine runs here: a pinned Go builder that matches go.mod, the
// shared static build, an empty non-root final stage, and a healthcheck
// that needs no shell.
func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t)
	var froms []string
	var stage int
	final := map[string][]string{}
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
			stage++
			continue
		}
		if stage >= 2 {
			final[in.cmd] = append(final[in.cmd], in.args)
		}
	}
	if len(froms) != 2 {
		t.Fatalf("stages %q, want a build stage and a final one", froms)
	}
	if want := "golang:" + goDirective(t) + " AS build"; froms[0] != want {
		t.Errorf("build stage FROM %s, want %s (go.mod's go version, pinned)", froms[0], want)
	}
	if froms[1] != "scratch" {
		t.Errorf("final stage FROM %s, want scratch", froms[1])
	}
	var builds bool
	for _, in := range ins {
		if in.cmd == "RUN" && strings.Contains(in.args, "scripts/build-static.sh /out/switchover") {
			builds = true
		}
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			t.Errorf("RUN %s: build with scripts/build-static.sh, the build CI tests", in.args)
		}
	}
	if !builds {
		t.Error("no RUN of scripts/build-static.sh")
	}
	if got := final["USER"]; !slices.Equal(got, []string{"65532:65532"}) {
		t.Errorf("final USER %q, want 65532:65532 (not root)", got)
	}
	if got := strings.Join(final["EXPOSE"], " "); !strings.Contains(got, "8080") {
		t.Errorf("EXPOSE %q, want the API port 8080", got)
	}
	if got := final["HEALTHCHECK"]; len(got) != 1 || !strings.Contains(got[0], `CMD ["/switchover", "health"`) {
		t.Errorf("HEALTHCHECK %q, want the exec form of /switchover health (no shell in scratch)", got)
	}
	if got := final["ENTRYPOINT"]; !slices.Equal(got, []string{`["/switchover"]`}) {
		t.Errorf("ENTRYPOINT %q", got)
	}
	if got := final["CMD"]; !slices.Equal(got, []string{`["serve", "-c", "/etc/switchover/switchover.yaml"]`}) {
		t.Errorf("CMD %q, want serve with the config under /etc/switchover", got)
	}
	var certs bool
	for _, c := range final["COPY"] {
		certs = certs || strings.Contains(c, "ca-certificates.crt")
	}
	if !certs {
		t.Error("the final stage has no CA certificates: HTTPS to every provider would fail")
	}
	var data bool
	for _, c := range final["COPY"] {
		data = data || strings.Contains(c, "--chown=65532:65532") && strings.HasSuffix(c, " /var/lib/switchover")
	}
	if !data {
		t.Error("the final stage has no /var/lib/switchover owned by the gateway's user: the embedded store could not be written")
	}
	script, err := os.ReadFile(buildScript)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-s -w -X main.version=$version -X main.commit=$commit`, "./cmd/switchover"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("%s lacks %q", buildScript, want)
		}
	}
}

// TestStaticBuild builds the image's binary as the Dockerfile does (or
// takes the one CI built that way) and checks that it needs no loader or
// shared library, so it runs on scratch, and that it runs.
func TestStaticBuild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux")
	}
	const stamp = "v0.0.0-static-test"
	bin := os.Getenv(ciBinaryEnv)
	wantVersion := ""
	if bin == "" {
		if testing.Short() {
			t.Skip("builds the gateway; set " + ciBinaryEnv + " to a binary scripts/build-static.sh built")
		}
		bin = filepath.Join(t.TempDir(), "switchover")
		cmd := exec.Command("sh", buildScript, bin)
		cmd.Env = append(os.Environ(), "VERSION="+stamp, "COMMIT=abc1234")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", buildScript, err, out)
		}
		wantVersion = stamp
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s has a %v program header: dynamically linked, it would not run on scratch", bin, p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		t.Errorf("%s needs shared libraries %q", bin, libs)
	}
	if f.Section(".symtab") != nil {
		t.Errorf("%s has a symbol table: built without -s", bin)
	}
	out, err := exec.Command(bin, "version", "-json").Output()
	if err != nil {
		t.Fatalf("%s version -json: %v", bin, err)
	}
	var info struct {
		Version, Commit, Go string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("version -json: %v: %s", err, out)
	}
	if info.Version == "" || info.Go == "" || (wantVersion != "" && (info.Version != wantVersion || info.Commit != "abc1234")) {
		t.Errorf("version -json %+v, want version %q commit abc1234", info, wantVersion)
	}
}

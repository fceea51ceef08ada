// Package pgtest runs a real PostgreSQL server for tests: initdb in the
// test's temporary directory, the server on a free loopback port with its
// socket in that directory and fsync off, stopped when the test ends.
//
// The binaries (initdb, postgres) are looked up on PATH, then in Debian's
// /usr/lib/postgresql/<version>/bin (newest version first). When they are
// missing the test is skipped, unless the environment variable
// SWITCHOVER_REQUIRE_POSTGRES is "1" (CI sets it), in which case it fails.
//
// PostgreSQL refuses to run as root. When the test runs as root, initdb
// and the server run as the "postgres" user (Debian's package creates it)
// or, without it, as "nobody"; the temporary directory is opened to that
// user.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
)

// readyTimeout bounds how long a starting server may take to accept
// connections.
const readyTimeout = 20 * time.Second

// Start starts a PostgreSQL server for t and returns the DSN of a new,
// empty database on it. The server is stopped at t.Cleanup.
func Start(t testing.TB) (dsn string) {
	t.Helper()
	return StartServer(t).NewDatabase(t)
}

// Server is a PostgreSQL server run for a test. Stop and Restart make it
// go away and come back on the same port with the same data, for tests of
// what clients do meanwhile. A Server is safe for concurrent use.
type Server struct {
	t       testing.TB
	bin     string // directory of initdb and postgres
	dir     string // data directory
	sock    string // socket directory
	port    int
	cred    *syscall.Credential // nil: run as ourselves
	started time.Duration       // time initdb and the first start took

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	out  *lockedBuffer
	dbs  int
}

// StartServer initialises and starts a PostgreSQL server for t. It is
// stopped at t.Cleanup.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin := binOrSkip(t)
	base := t.TempDir()
	// t.TempDir and its parent are 0700 root: let the server's user
	// through both.
	s, err := newServer(bin, base, filepath.Dir(base), base)
	if s != nil {
		t.Cleanup(s.Stop)
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	s.t = t
	t.Logf("pgtest: PostgreSQL on 127.0.0.1:%d ready in %v (initdb and start)", s.port, s.started.Round(time.Millisecond))
	return s
}

// binOrSkip returns the directory of the PostgreSQL binaries, or skips t
// without them (fails it when SWITCHOVER_REQUIRE_POSTGRES=1).
func binOrSkip(t testing.TB) string {
	t.Helper()
	bin, err := findBin()
	if err != nil {
		if os.Getenv("SWITCHOVER_REQUIRE_POSTGRES") == "1" {
			t.Fatalf("pgtest: %v, and SWITCHOVER_REQUIRE_POSTGRES=1", err)
		}
		t.Skipf("pgtest: %v (install PostgreSQL, e.g. apt-get install postgresql; set SWITCHOVER_REQUIRE_POSTGRES=1 to fail instead of skipping)", err)
	}
	return bin
}

// newServer runs initdb in base and starts the server; open are the
// directories to open to the server's user when running as root. A
// server returned with an error may need stopping.
func newServer(bin, base string, open ...string) (*Server, error) {
	begin := time.Now()
	s := &Server{bin: bin, dir: filepath.Join(base, "pg", "data"), sock: filepath.Join(base, "pg", "sock")}
	if err := s.prepare(open); err != nil {
		return nil, err
	}
	if out, err := s.command(filepath.Join(bin, "initdb"), "-D", s.dir, "-U", "postgres",
		"--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	var err, lastErr error
	for range 5 { // a free port can be taken before the server binds it
		if s.port, err = freePort(); err != nil {
			return s, err
		}
		if lastErr = s.start(); lastErr == nil {
			s.started = time.Since(begin)
			return s, nil
		}
	}
	return s, lastErr
}

// findBin returns the directory holding initdb and postgres.
func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("initdb and postgres are neither on PATH nor in /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// prepare makes the directories, and when we are root picks the user to
// run as and opens the way to them through the directories open.
func (s *Server) prepare(open []string) error {
	pg := filepath.Dir(s.dir)
	if err := os.MkdirAll(s.sock, 0o700); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		if u, err = user.Lookup("nobody"); err != nil {
			return fmt.Errorf("running as root, and neither the postgres nor the nobody user exists to run PostgreSQL as")
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	for _, d := range open {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	for _, d := range []string{pg, s.sock} {
		if err := os.Chown(d, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Dir(s.dir)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}

// DSN returns the address of database db on the server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// NewDatabase creates an empty database and returns its DSN; it is
// dropped with the server at t.Cleanup.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	s.mu.Lock()
	s.dbs++
	name := fmt.Sprintf("test%d", s.dbs)
	s.mu.Unlock()
	db, err := sql.Open("pgx", s.DSN("postgres"))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return s.DSN(name)
}

// Stop shuts the server down (fast shutdown: connections are closed) and
// waits for it; the data stays for Restart. Stopping a stopped server
// does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(readyTimeout):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart starts the server again on the same port with the same data,
// and returns once it accepts connections; a running server is stopped
// first.
func (s *Server) Restart() {
	if s.t == nil {
		panic("pgtest: the shared server cannot be restarted: use StartServer")
	}
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("pgtest: restart: %v", err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("server already running")
	}
	cmd := s.command(filepath.Join(s.bin, "postgres"), "-D", s.dir,
		"-p", strconv.Itoa(s.port),
		"-k", s.sock,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=100",
		"-c", "shared_buffers=32MB",
	)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	if err := waitReady(s.DSN("postgres"), done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("postgres on port %d: %w\n%s", s.port, err, out.String())
	}
	s.cmd, s.done, s.out = cmd, done, out
	return nil
}

// waitReady polls dsn until the server answers, the process exits or
// readyTimeout passes.
func waitReady(dsn string, done <-chan struct{}) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("exited before accepting connections")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond) // polling for readiness, bounded by deadline
	}
	return fmt.Errorf("not accepting connections within %v: %v", readyTimeout, err)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// FailWrites makes every INSERT into table of the database at dsn fail as
// on a full disk (SQLSTATE 53100 disk_full, "No space left on device"),
// while reads and other tables keep working, until the returned function
// is called. A trigger does it, so it holds for every connection,
// superuser or not, which revoking privileges would not (tests connect as
// the superuser).
func FailWrites(t testing.TB, dsn, table string) (restore func()) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for _, q := range []string{
		`CREATE OR REPLACE FUNCTION pgtest_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full', HINT = 'Check free disk space.';
END $$`,
		fmt.Sprintf(`CREATE TRIGGER pgtest_disk_full BEFORE INSERT ON %s FOR EACH STATEMENT EXECUTE FUNCTION pgtest_disk_full()`, table),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			t.Fatalf("pgtest: fail writes to %s: %v", table, err)
		}
	}
	return func() {
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`DROP TRIGGER pgtest_disk_full ON %s`, table)); err != nil {
			t.Errorf("pgtest: writes to %s again: %v", table, err)
		}
	}
}

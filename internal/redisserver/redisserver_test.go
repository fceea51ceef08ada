package redisserver

import (
	"os"
	"os/exec"
	"testing"
)

// redisServer is redis-server's path, or the test is skipped (failed
// with SWITCHOVER_REQUIRE_REDIS=1, as CI sets it).
func redisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("SWITCHOVER_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server is not on PATH and SWITCHOVER_REQUIRE_REDIS=1: %v", err)
		}
		t.Skipf("redis-server is not on PATH: %v", err)
	}
	return bin
}

// TestStartStopRestart: a started server answers PING, a stopped one
// does not, a restarted one answers again on the same address.
func TestStartStopRestart(t *testing.T) {
	s, err := Start(redisServer(t), t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	addr := s.Addr()
	if err := Ping(addr); err != nil {
		t.Fatalf("ping after Start: %v", err)
	}
	s.Stop()
	if err := Ping(addr); err == nil {
		t.Fatal("ping answered after Stop")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != addr || Ping(addr) != nil {
		t.Fatalf("after Restart: %s (was %s), ping %v", s.Addr(), addr, Ping(addr))
	}
}

// TestStartFailsForABinaryThatIsNotRedis: a program that exits at once
// is an error, with no process left behind.
func TestStartFailsForABinaryThatIsNotRedis(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false on PATH")
	}
	if s, err := Start(bin, t.TempDir(), false); err == nil {
		s.Stop()
		t.Fatal("Start of false succeeded")
	}
}

// Regression: freePort could hand out a port a stopped node had used,
// which its cluster's live peers still gossip to; two clusters then met
// (TestClusterConformance formed with five known nodes, the redisstore
// cluster tests side by side on a busy machine). No port is handed out
// twice in a process, even once it is free again.
func TestFreePortNeverHandsOutAPortTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

package redistest

import (
	"testing"
)

func TestStartAnswersPing(t *testing.T) {
	s := StartServer(t)
	if err := ping(s.Addr()); err != nil {
		t.Fatalf("ping after Start: %v", err)
	}
	if got, want := Start(t)[:len("redis://127.0.0.1:")], "redis://127.0.0.1:"; got != want {
		t.Errorf("Start URL prefix = %q, want %q", got, want)
	}
}

func TestStopAndRestart(t *testing.T) {
	s := StartServer(t)
	addr := s.Addr()
	s.Stop()
	if err := ping(addr); err == nil {
		t.Fatal("ping answered after Stop")
	}
	s.Stop() // stopping a stopped server does nothing
	s.Restart()
	if s.Addr() != addr {
		t.Errorf("Restart moved the server from %s to %s", addr, s.Addr())
	}
	if err := ping(addr); err != nil {
		t.Fatalf("ping after Restart: %v", err)
	}
	s.Restart() // restarting a running server stops it first
	if err := ping(addr); err != nil {
		t.Fatalf("ping after second Restart: %v", err)
	}
}

func TestPauseAndResume(t *testing.T) {
	s := StartServer(t)
	s.Pause()
	if err := ping(s.Addr()); err == nil {
		t.Fatal("ping answered while paused")
	}
	s.Resume()
	if err := ping(s.Addr()); err != nil {
		t.Fatalf("ping after Resume: %v", err)
	}
	s.Pause()
	s.Stop() // a paused server can be stopped
}

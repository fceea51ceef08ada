package bench

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name, in string
		want     time.Duration
		ppid     int
	}{
		// /proc/self/stat of cat: utime 0, stime 0.
		{"idle", "13201 (cat) R 13195 13195 10270 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 158739 3133440 392 18446744073709551615 0 0", 0, 13195},
		// utime 250, stime 37 ticks: 2.87 s.
		{"busy", "42 (switchover) S 1 42 42 0 -1 4194560 9000 0 0 0 250 37 0 0 20 0 9 0 100 800000000 9000", 2870 * time.Millisecond, 1},
		// A command name with spaces and parentheses.
		{"odd name", "7 (a) b (c) S 3 7 7 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 1 1 1", 100 * time.Millisecond, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.in))
			if err != nil || got != tt.want {
				t.Errorf("parseStatCPU = %v, %v; want %v", got, err, tt.want)
			}
			pp, err := parseStatPPid([]byte(tt.in))
			if err != nil || pp != tt.ppid {
				t.Errorf("parseStatPPid = %v, %v; want %v", pp, err, tt.ppid)
			}
		})
	}
	for _, bad := range []string{"", "1 (x) S 1 2 3", "1 (x) S 0 0 0 0 0 0 0 0 0 0 x y 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q): no error", bad)
		}
	}
}

func TestParseVmRSS(t *testing.T) {
	in := "Name:\tswitchover\nVmPeak:\t 1300000 kB\nVmRSS:\t   73728 kB\nRssAnon:\t 60000 kB\n"
	if got, err := parseVmRSS([]byte(in)); err != nil || got != 73728 {
		t.Errorf("parseVmRSS = %d, %v; want 73728", got, err)
	}
	if _, err := parseVmRSS([]byte("Name:\tkthreadd\n")); err == nil {
		t.Error("a kernel thread's status (no VmRSS): no error")
	}
}

func TestOwnProcess(t *testing.T) {
	pid := os.Getpid()
	if _, err := procCPU(pid); err != nil {
		t.Fatal(err)
	}
	rss, err := rssOf([]int{pid})
	if err != nil || rss <= 0 {
		t.Fatalf("rssOf(self) = %d, %v", rss, err)
	}
	if kids := childrenOf(os.Getppid()); len(kids) == 0 {
		t.Errorf("childrenOf(parent) found no children, not even this process %d", pid)
	}
}

func TestParseRssAnon(t *testing.T) {
	in := "Name:\tswitchover\nVmRSS:\t   73728 kB\nRssAnon:\t   60000 kB\nRssFile:\t 13728 kB\n"
	if got, err := parseStatusKB([]byte(in), "RssAnon:"); err != nil || got != 60000 {
		t.Errorf("RssAnon = %d, %v; want 60000", got, err)
	}
	if _, err := parseStatusKB([]byte("Name:\tx\n"), "RssAnon:"); err == nil {
		t.Error("a status without RssAnon parsed")
	}
}

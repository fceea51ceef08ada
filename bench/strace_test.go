package bench

import (
	"os"
	"testing"
)

func TestParseStraceSummary(t *testing.T) {
	tests := []struct {
		file      string
		total     int64
		first     syscallCount
		rows      int
		errorsFor map[string]int64
	}{
		// strace 6.1 -f -c on nginx's master and worker, 200 requests.
		{"testdata/strace-nginx.txt", 1613, syscallCount{Name: "epoll_wait", Calls: 404}, 8, nil},
		// strace 6.1 -f -c on the gateway, 200 requests: an errors column.
		{"testdata/strace-switchover.txt", 5314, syscallCount{Name: "nanosleep", Calls: 1668}, 17,
			map[string]int64{"futex": 55, "read": 575, "accept4": 5, "rt_sigreturn": 1, "restart_syscall": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			rows, total, err := parseStraceSummary(string(b))
			if err != nil {
				t.Fatal(err)
			}
			if total != tt.total || len(rows) != tt.rows || rows[0] != tt.first {
				t.Errorf("total %d, %d rows, first %+v; want %d, %d, %+v", total, len(rows), rows[0], tt.total, tt.rows, tt.first)
			}
			for _, r := range rows {
				if want := tt.errorsFor[r.Name]; r.Errors != want {
					t.Errorf("%s: %d errors, want %d", r.Name, r.Errors, want)
				}
			}
		})
	}
}

func TestParseStraceSummaryRefusesOtherText(t *testing.T) {
	for _, in := range []string{"", "strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n",
		"% time seconds\n------ ---\n 1 2 3 four read\n"} {
		if _, _, err := parseStraceSummary(in); err == nil {
			t.Errorf("parseStraceSummary(%q): no error", in)
		}
	}
}

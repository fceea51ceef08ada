package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterSize is how many masters StartCluster runs: the fewest
// redis-cli --cluster create accepts.
const clusterSize = 3

// clusterTimeout bounds the cluster's forming: redis-cli --cluster create
// (which waits for every node to agree on the slots, polling once a
// second) and the nodes' reporting it ok. A setup bound, not a figure the
// test checks: on a machine whose two cores are busy with other tests,
// the join took over 10 s (TestClusterKeysCarryPrefix, CI, 2026-12-03).
const clusterTimeout = 60 * time.Second

// Cluster is a Redis Cluster of three masters and no replicas run for a
// test, each master a Server of its own. It is safe for concurrent use.
type Cluster struct {
	servers []*Server
}

// StartCluster starts a Redis Cluster of three masters on loopback for t,
// with the 16384 slots split between them by redis-cli --cluster create,
// and returns once every node reports the cluster ok. The nodes are
// stopped at t.Cleanup.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin := lookPath(t, "redis-server")
	cli := lookPath(t, "redis-cli")
	c := &Cluster{}
	for range clusterSize {
		c.servers = append(c.servers, startServer(t, bin, true))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := waitClusterOK(c.Addrs()); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

// Addrs returns the masters' host:port, in the order of Servers.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.servers))
	for i, s := range c.servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// URL returns the cluster as go-redis's ParseClusterURL reads it: the
// first master in the host, the others as addr parameters
// (redis://127.0.0.1:A?addr=127.0.0.1:B&addr=127.0.0.1:C).
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	return "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
}

// Servers returns the masters, to stop, pause or restart one. A restarted
// master keeps its slots (its nodes.conf survives) but not its keys.
func (c *Cluster) Servers() []*Server { return append([]*Server(nil), c.servers...) }

// waitClusterOK polls CLUSTER INFO on every node of addrs until each
// reports cluster_state:ok, all 16384 slots assigned and every node
// known, or clusterTimeout passes.
func waitClusterOK(addrs []string) error {
	deadline := time.Now().Add(clusterTimeout)
	for _, addr := range addrs {
		for {
			info, err := command(addr, "CLUSTER", "INFO")
			if err == nil {
				err = clusterOK(info, len(addrs))
			}
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster not ok within %v: %s: %v", clusterTimeout, addr, err)
			}
			time.Sleep(10 * time.Millisecond) // polling for readiness, bounded by deadline
		}
	}
	return nil
}

// clusterOK reports why CLUSTER INFO's answer info is not that of a
// healthy cluster of nodes masters, or nil.
func clusterOK(info string, nodes int) error {
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": "16384",
		"cluster_slots_ok":       "16384",
		"cluster_known_nodes":    strconv.Itoa(nodes),
		"cluster_size":           strconv.Itoa(nodes),
	}
	for k, v := range want {
		if fields[k] != v {
			return fmt.Errorf("%s is %q, want %q", k, fields[k], v)
		}
	}
	return nil
}

// command sends args to addr and returns the answer, which must be a
// simple or bulk string.
func command(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, req.String()); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch {
	case strings.HasPrefix(line, "+"):
		return line[1:], nil
	case strings.HasPrefix(line, "$"):
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("answer %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("answer %q", line)
	}
}

package redistest

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestStartClusterIsOK(t *testing.T) {
	start := time.Now()
	c := StartCluster(t)
	t.Logf("cluster up in %v", time.Since(start))
	addrs := c.Addrs()
	if len(addrs) != 3 {
		t.Fatalf("Addrs = %q, want 3", addrs)
	}
	for _, addr := range addrs {
		info, err := command(addr, "CLUSTER", "INFO")
		if err != nil {
			t.Fatalf("CLUSTER INFO on %s: %v", addr, err)
		}
		if err := clusterOK(info, 3); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	u, err := url.Parse(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if got := append([]string{u.Host}, u.Query()["addr"]...); strings.Join(got, " ") != strings.Join(addrs, " ") {
		t.Errorf("URL %s names %q, want %q", c.URL(), got, addrs)
	}
}

func TestClusterOKRejects(t *testing.T) {
	ok := "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\ncluster_known_nodes:3\r\ncluster_size:3\r\n"
	if err := clusterOK(ok, 3); err != nil {
		t.Errorf("healthy cluster: %v", err)
	}
	for name, info := range map[string]string{
		"state fail":     strings.Replace(ok, "state:ok", "state:fail", 1),
		"slots missing":  strings.Replace(ok, "slots_assigned:16384", "slots_assigned:10923", 1),
		"node not known": strings.Replace(ok, "known_nodes:3", "known_nodes:2", 1),
		"empty":          "",
	} {
		if clusterOK(info, 3) == nil {
			t.Errorf("%s: clusterOK accepted it", name)
		}
	}
}

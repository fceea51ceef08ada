package redisstore_test

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// waitingTests is how many of this package's parallel tests run at once
// unless -parallel says otherwise. They spend their time waiting, not
// computing: a Redis Cluster forms in about two seconds of redis-cli
// polling once a second, with the CPU idle, so the default (GOMAXPROCS,
// two in CI) left the package at 26 s where eight at once take 13 (43 s with the
// tests one at a time; measured 2026-12-04).
const waitingTests = 8

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(waitingTests))
	}
	os.Exit(m.Run())
}

package tenant

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/fleet/redisstore"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/redistest"
)

// redisStore runs the fleet tests on a real redis-server: the replicas
// share one client (as separate processes would share the server),
// restart is the server killed and started again empty, and down and up
// are the server stopped for a while, then started empty.
func redisStore(t *testing.T) fleetStore {
	srv := redistest.StartServer(t)
	st, err := redisstore.New(redisstore.Options{URL: srv.URL(), IOTimeout: 2 * time.Second, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// After failed dials the client dials again only once a second (of
	// the wall clock): wait for it, or the simulated minutes would pass
	// with the server back and the client not yet.
	restart := func() {
		srv.Restart()
		var err error
		poll.Until(t, 10*time.Second, func() bool {
			_, err = st.List(context.Background(), "limits/")
			return err == nil
		}, func() string { return fmt.Sprintf("the restarted server does not answer: %v", err) })
	}
	return fleetStore{kv: st,
		forget:  func(n string) { st.Delete(context.Background(), "limits/"+n) },
		restart: restart,
		down:    srv.Stop,
		up:      restart,
	}
}

func TestRedisFleetFreshKeepsToTheLimit(t *testing.T) { testFreshFleet(t, redisStore(t)) }

func TestRedisFleetRolloutKeepsToTheLimit(t *testing.T) { testRollout(t, redisStore(t)) }

func TestRedisFleetScaleUpKeepsToTheLimit(t *testing.T) { testScaleUp(t, redisStore(t)) }

func TestRedisFleetRestartBetweenExchangesKeepsToTheLimit(t *testing.T) {
	testRestartBetweenExchanges(t, redisStore(t))
}

func TestRedisFleetOutageAndRestartKeepsToTheLimit(t *testing.T) {
	testOutageAndRestart(t, redisStore(t))
}

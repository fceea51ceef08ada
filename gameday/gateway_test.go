package gameday

import (
	"net"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
)

// testGateway is the real gateway, as switchover gameday starts it.
func testGateway(cfg *config.Config, ln net.Listener, h Hooks) (func(), error) {
	return gateway.Start(cfg, ln, gateway.Options{Logger: h.Logger, OnTransition: h.OnTransition, Sinks: h.Sinks, Observer: h.Observer})
}

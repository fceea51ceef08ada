// Package gameday rehearses regional outages and quota shortages on one
// machine: it starts simulated regions, a gateway (in process, over real
// loopback HTTP) or a client-side failover strategy, drives load through
// them, and reports each setup side by side, as tables (text, Markdown,
// JSON) and as a self-contained HTML page with plots.
package gameday

// Package sim simulates LLM backend deployments (Azure OpenAI, OpenAI,
// Anthropic Messages and Gemini flavours) on loopback listeners, for demos,
// load tests and game days of the switchover gateway.
//
// Each simulated deployment answers chat completions, completions and
// embeddings (Azure, OpenAI), messages (Anthropic) or generateContent
// (Gemini) with cheap deterministic text, or with a deterministic call of
// an offered tool, in the exact wire shape of its flavour. It enforces a
// per-slice RPM/TPM quota the way Azure does (tokens estimated before the
// call, refused requests not charged) with realistic 429 bodies and retry
// headers, models latency with a lognormal draw, and can be made to fail
// on demand: down, overloaded, 500s, blackholes, TCP resets, slow answers,
// stalled or dropped streams, quota cuts and error rates, switched through
// a small control API under /_sim/ or on a schedule.
//
// Decisions read time from an injected [Clock] and draw randomness from a
// seeded source per deployment, so a test can drive quotas and schedules
// with a fake clock and replay the same decisions from the same seed.
package sim

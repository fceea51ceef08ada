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
// Beyond chat, the OpenAI and Azure flavours serve the Responses API
// (plain, streamed and background; stored responses with GET, DELETE,
// cancel and input_items; previous_response_id), files, batches, audio
// transcriptions, translations and speech, image generations, edits and
// variations, moderations (OpenAI only) and the Realtime API over
// WebSocket; the Anthropic flavour serves count_tokens and message
// batches. Azure serves them under /openai/v1/... (model in the body) and
// under the api-version forms: /openai/deployments/{dep}/... for audio
// and images, /openai/{responses,files,batches}...?api-version=... for
// the resource-level ones, /openai/realtime?api-version=...&deployment=...
// for realtime. Every such call passes the same fault and key checks as
// chat and is counted in the stats and metrics; calls that make something
// (answers, uploads, batches, connects) are charged to the quota, reads,
// lists, deletes and cancels of stored objects are not. Stored objects
// live in the deployment's memory, bounded (MaxStoredResponses,
// MaxStoredFiles, MaxStoredFileBytes, MaxStoredBatches; the oldest are
// forgotten first), under ids that carry a per-deployment tag
// ([Sim.ObjectOwner]) so ids never collide across deployments. Background
// responses and batches progress on the sim's clock, worked out when they
// are read, so a test drives them with a fake clock.
//
// Decisions read time from an injected [Clock] and draw randomness from a
// seeded source per deployment, so a test can drive quotas and schedules
// with a fake clock and replay the same decisions from the same seed.
package sim

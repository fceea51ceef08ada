// The harness shared by the SDK scripts: the gateway's address and key
// from the environment, named checks run one after another, each bounded
// by a timeout, and one JSON line per check on stdout:
// {"check":"chat","ok":true,"detail":"..."}.
//
// Environment:
//   SWITCHOVER_URL    the gateway's root, http(s)://host:port (required)
//   SWITCHOVER_KEY    a client key of the gateway (required)
//   SWITCHOVER_WSS_URL the gateway's root over TLS (https://host:port), for
//                     the Realtime checks: the SDK's Realtime client dials
//                     wss:// only. NODE_EXTRA_CA_CERTS names its CA.
//   SDK_MODEL         the model (pool name or alias) the checks call
//   SDK_CHECK_TIMEOUT_MS  per check, default 30000
//
// Arguments: the names of the checks to run (default: all), comma- or
// space-separated. An unknown name is reported as a failed check.

import assert from 'node:assert/strict';

export { assert };

export function env(name, fallback) {
  const v = process.env[name];
  if (v === undefined || v === '') {
    if (fallback !== undefined) return fallback;
    throw new Error(`${name} is not set`);
  }
  return v;
}

export const gatewayURL = () => env('SWITCHOVER_URL').replace(/\/+$/, '');
export const gatewayKey = () => env('SWITCHOVER_KEY');
export const model = () => env('SDK_MODEL');

function emit(check, ok, detail) {
  process.stdout.write(JSON.stringify({ check, ok, detail: String(detail ?? '').slice(0, 2000) }) + '\n');
}

function describe(err) {
  if (!err) return 'error';
  const parts = [];
  if (err.status) parts.push(`status ${err.status}`);
  parts.push(err.message || String(err));
  if (err.error && typeof err.error === 'object') parts.push(JSON.stringify(err.error));
  if (err.cause) parts.push(`cause: ${err.cause.message || err.cause}`);
  return parts.join(': ');
}

// run runs the checks named on the command line (all of them without
// arguments) in the order of the table; each returns a short detail string
// or throws. The process exits 0 when every check ran, whatever their
// outcome: the Go test reads the lines.
export async function run(checks) {
  const args = process.argv.slice(2).flatMap((a) => a.split(/[,\s]+/)).filter(Boolean);
  const names = args.length ? args : Object.keys(checks);
  const timeout = Number(process.env.SDK_CHECK_TIMEOUT_MS || 30000);
  for (const name of names) {
    const fn = checks[name];
    if (!fn) {
      emit(name, false, 'no such check');
      continue;
    }
    let timer;
    try {
      const detail = await Promise.race([
        fn(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`timed out after ${timeout}ms`)), timeout);
        }),
      ]);
      emit(name, true, detail ?? '');
    } catch (err) {
      emit(name, false, describe(err));
    } finally {
      clearTimeout(timer);
    }
  }
  // Realtime sockets or keep-alive agents must not hold the process.
  process.exit(0);
}

// text asserts a non-empty string and returns it.
export function text(v, what) {
  assert.equal(typeof v, 'string', `${what}: not a string: ${JSON.stringify(v)}`);
  assert.ok(v.length > 0, `${what}: empty`);
  return v;
}

// usage asserts token counts: positive integers for the named fields.
export function usage(u, ...fields) {
  assert.ok(u && typeof u === 'object', `usage missing: ${JSON.stringify(u)}`);
  for (const f of fields) {
    assert.ok(Number.isInteger(u[f]) && u[f] > 0, `usage.${f} = ${JSON.stringify(u[f])}`);
  }
}

// A tool both SDK scripts offer; the answer the test sends back for it.
export const weatherTool = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string' } },
    required: ['location'],
  },
};

// The official Anthropic SDK (@anthropic-ai/sdk) through the gateway's
// /v1/messages: plain, streamed, tools, count_tokens, extended thinking
// and message batches, with the shape of each answer asserted. See lib.mjs
// for the environment.

import Anthropic from '@anthropic-ai/sdk';
import { assert, gatewayKey, gatewayURL, model, run, text, usage, weatherTool } from './lib.mjs';

const client = new Anthropic({ baseURL: gatewayURL(), apiKey: gatewayKey(), maxRetries: 0 });
const messages = [{ role: 'user', content: 'Say hello in three words.' }];
const tools = [{ name: weatherTool.name, description: weatherTool.description, input_schema: weatherTool.parameters }];

function messageShape(m) {
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  text(m.id, 'id');
  text(m.model, 'model');
  assert.ok(Array.isArray(m.content) && m.content.length > 0, 'no content');
  for (const b of m.content) {
    // Anthropic writes no citations member on a block that cites
    // nothing; null breaks clients that validate the answer.
    if (b.type === 'text') assert.ok(!('citations' in b) || Array.isArray(b.citations), `citations: ${JSON.stringify(b.citations)}`);
  }
  assert.ok(['end_turn', 'max_tokens', 'tool_use', 'stop_sequence'].includes(m.stop_reason), `stop_reason ${m.stop_reason}`);
  usage(m.usage, 'input_tokens', 'output_tokens');
}

function textOf(m) {
  return m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

const checks = {
  async messages() {
    const m = await client.messages.create({ model: model(), max_tokens: 30, messages });
    messageShape(m);
    return text(textOf(m), 'text');
  },

  async messages_stream() {
    const s = await client.messages.create({ model: model(), max_tokens: 30, messages, stream: true });
    const types = [];
    let out = '', stop = null, outTokens = 0;
    for await (const ev of s) {
      types.push(ev.type);
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') out += ev.delta.text;
      if (ev.type === 'message_delta') {
        stop = ev.delta.stop_reason;
        outTokens = ev.usage.output_tokens;
      }
    }
    assert.equal(types[0], 'message_start');
    assert.equal(types.at(-1), 'message_stop');
    for (const t of ['content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta']) {
      assert.ok(types.includes(t), `no ${t}: ${types.join(' ')}`);
    }
    text(out, 'streamed text');
    assert.ok(stop, 'no stop_reason');
    assert.ok(outTokens > 0, 'no output_tokens');
    return `${types.length} events: ${out}`;
  },

  async messages_stream_helper() {
    // The SDK's stream helper accumulates the events into a message.
    const s = client.messages.stream({ model: model(), max_tokens: 30, messages });
    const m = await s.finalMessage();
    messageShape(m);
    return text(textOf(m), 'text');
  },

  async tools() {
    const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await client.messages.create({ model: model(), max_tokens: 100, tools, messages: ask });
    messageShape(first);
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use, 'no tool_use block');
    assert.equal(use.name, 'get_weather');
    assert.equal(typeof use.input, 'object');
    text(use.id, 'tool_use id');
    const second = await client.messages.create({
      model: model(), max_tokens: 50, tools,
      messages: [...ask, { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '{"temp_c": 18}' }] }],
    });
    messageShape(second);
    return `${use.name}(${JSON.stringify(use.input)}) -> ${textOf(second)}`;
  },

  async errors() {
    // The gateway's refusals reach the SDK as its own error classes, in
    // Anthropic's error format: a wrong key, then a missing max_tokens.
    const bad = new Anthropic({ baseURL: gatewayURL(), apiKey: 'not-a-key-of-this-gateway', maxRetries: 0 });
    await assert.rejects(bad.messages.create({ model: model(), max_tokens: 10, messages }), (e) => {
      assert.ok(e instanceof Anthropic.AuthenticationError, `${e.constructor.name} ${e.status}: ${e.message}`);
      assert.doesNotMatch(e.message, /not-a-key-of-this-gateway/, 'the key is echoed');
      return true;
    });
    await assert.rejects(client.messages.create({ model: model(), messages }), (e) => {
      assert.ok(e instanceof Anthropic.BadRequestError, `${e.constructor.name} ${e.status}: ${e.message}`);
      assert.equal(e.error?.type, 'error', `body ${JSON.stringify(e.error)}`);
      assert.equal(e.error?.error?.type, 'invalid_request_error', `body ${JSON.stringify(e.error)}`);
      return true;
    });
    return 'AuthenticationError, then BadRequestError (invalid_request_error)';
  },

  async count_tokens() {
    const c = await client.messages.countTokens({ model: model(), messages });
    assert.ok(Number.isInteger(c.input_tokens) && c.input_tokens > 0, `input_tokens ${c.input_tokens}`);
    return `${c.input_tokens} tokens`;
  },

  async thinking() {
    const m = await client.messages.create({
      model: model(), max_tokens: 2048, messages,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    messageShape(m);
    text(textOf(m), 'text');
    for (const b of m.content.filter((b) => b.type === 'thinking')) {
      assert.equal(typeof b.thinking, 'string');
      assert.equal(typeof b.signature, 'string');
    }
    return m.content.map((b) => b.type).join(',');
  },

  async thinking_blocks() {
    // Anthropic answers a request with thinking enabled with a thinking
    // block (with its signature) before the text; a member that is not
    // Anthropic's own has none to give, so this is checked passed through.
    const m = await client.messages.create({
      model: model(), max_tokens: 2048, messages,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    messageShape(m);
    assert.equal(m.content[0]?.type, 'thinking', `content: ${m.content.map((b) => b.type).join(',')}`);
    text(m.content[0].thinking, 'thinking');
    text(m.content[0].signature, 'signature');
    return m.content.map((b) => b.type).join(',');
  },

  async message_batches() {
    const b = await client.messages.batches.create({
      requests: [{ custom_id: 'a', params: { model: model(), max_tokens: 10, messages } }],
    });
    assert.equal(b.type, 'message_batch');
    text(b.id, 'id');
    assert.ok(['in_progress', 'ended', 'canceling'].includes(b.processing_status), `status ${b.processing_status}`);
    const got = await client.messages.batches.retrieve(b.id);
    assert.equal(got.id, b.id);
    let listed = false;
    for await (const x of client.messages.batches.list({ limit: 20 })) {
      if (x.id === b.id) listed = true;
    }
    assert.ok(listed, 'batch not listed');
    const c = await client.messages.batches.cancel(b.id);
    assert.ok(['canceling', 'ended'].includes(c.processing_status), `cancel: ${c.processing_status}`);
    return `${b.id} ${b.processing_status} -> ${c.processing_status}`;
  },
};

await run(checks);

// The official OpenAI SDK (openai) through the gateway: every call the
// gateway serves for OpenAI clients, with the shape of each answer
// asserted. With SDK_AZURE=1 the same calls go through the SDK's
// AzureOpenAI client (api-key header, api-version, deployment URLs where
// the client makes them). See lib.mjs for the environment.

import OpenAI, { AzureOpenAI, toFile } from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { assert, env, gatewayKey, gatewayURL, model, run, text, usage, weatherTool } from './lib.mjs';

const azure = process.env.SDK_AZURE === '1';
const apiVersion = '2025-04-01-preview';

function client(base = gatewayURL()) {
  if (azure) {
    // The deployment is the pool: the client writes it into the path
    // (/openai/deployments/{d}/chat/completions?api-version=…).
    return new AzureOpenAI({ endpoint: base, apiKey: gatewayKey(), apiVersion, deployment: model(), maxRetries: 0 });
  }
  return new OpenAI({ baseURL: base + '/v1', apiKey: gatewayKey(), maxRetries: 0 });
}

// v1 is the client for the calls Azure serves under /openai/v1/ with the
// model in the body (Responses, files, batches): the AzureOpenAI client
// without a deployment, or the plain client.
function v1() {
  if (azure) return new AzureOpenAI({ endpoint: gatewayURL(), apiKey: gatewayKey(), apiVersion, maxRetries: 0 });
  return client();
}

const openai = client();
const messages = [{ role: 'user', content: 'Say hello in three words.' }];

function chatShape(c, n = 1) {
  assert.equal(c.object, 'chat.completion');
  text(c.id, 'id');
  assert.equal(c.choices.length, n, `choices: ${c.choices.length}, want ${n}`);
  c.choices.forEach((ch, i) => {
    assert.equal(ch.index, i);
    assert.equal(ch.message.role, 'assistant');
    text(ch.message.content, `choices[${i}].message.content`);
    assert.ok(['stop', 'length'].includes(ch.finish_reason), `finish_reason ${ch.finish_reason}`);
  });
  usage(c.usage, 'prompt_tokens', 'completion_tokens', 'total_tokens');
}

function responseShape(r) {
  assert.equal(r.object, 'response');
  text(r.id, 'id');
  assert.equal(r.status, 'completed');
  text(r.output_text, 'output_text');
  assert.ok(Number.isInteger(r.created_at), `created_at ${r.created_at}`);
  usage(r.usage, 'input_tokens', 'output_tokens', 'total_tokens');
}

const checks = {
  async chat() {
    const c = await openai.chat.completions.create({ model: model(), messages, max_tokens: 20 });
    chatShape(c);
    return c.choices[0].message.content;
  },

  async chat_n2() {
    const c = await openai.chat.completions.create({ model: model(), messages, max_tokens: 10, n: 2 });
    chatShape(c, 2);
    return `${c.choices.length} choices`;
  },

  async chat_stream() {
    const s = await openai.chat.completions.create({
      model: model(), messages, max_tokens: 20, stream: true, stream_options: { include_usage: true },
    });
    let out = '', finish = null, u = null, chunks = 0;
    for await (const ch of s) {
      chunks++;
      // Azure's first chunk carries only the prompt's filter results, with
      // an empty object and no choices, as Azure OpenAI sends it.
      if (azure && ch.object === '' && ch.prompt_filter_results && ch.choices.length === 0) continue;
      assert.equal(ch.object, 'chat.completion.chunk');
      for (const c of ch.choices) {
        out += c.delta?.content ?? '';
        finish = c.finish_reason ?? finish;
      }
      if (ch.usage) u = ch.usage;
    }
    text(out, 'streamed text');
    assert.ok(finish, 'no finish_reason');
    usage(u, 'prompt_tokens', 'completion_tokens');
    return `${chunks} chunks: ${out}`;
  },

  async chat_stream_helper() {
    // The SDK's stream helper accumulates the chunks into a completion.
    const s = openai.chat.completions.stream({ model: model(), messages, max_tokens: 20 });
    const c = await s.finalChatCompletion();
    text(c.choices[0].message.content, 'final content');
    return c.choices[0].message.content;
  },

  async chat_tools() {
    const tools = [{ type: 'function', function: weatherTool }];
    const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const first = await openai.chat.completions.create({ model: model(), messages: ask, tools, max_tokens: 50 });
    const m = first.choices[0].message;
    assert.equal(first.choices[0].finish_reason, 'tool_calls');
    assert.ok(m.tool_calls?.length >= 1, 'no tool call');
    const call = m.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    JSON.parse(call.function.arguments);
    const second = await openai.chat.completions.create({
      model: model(), tools, max_tokens: 30,
      messages: [...ask, m, { role: 'tool', tool_call_id: call.id, content: '{"temp_c": 18}' }],
    });
    chatShape(second);
    return `${call.function.name}(${call.function.arguments}) -> ${second.choices[0].message.content}`;
  },

  async chat_tools_runner() {
    // runTools: the SDK's own loop calls the function and sends the result.
    let called = 0;
    const runner = openai.chat.completions.runTools({
      model: model(), max_tokens: 50,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [{ type: 'function', function: { ...weatherTool, function: () => { called++; return { temp_c: 18 }; }, parse: JSON.parse } }],
    });
    const content = await runner.finalContent();
    assert.ok(called >= 1, 'the tool was not called');
    text(content, 'final content');
    return `${called} call(s): ${content}`;
  },

  async errors() {
    // The gateway's refusals reach the SDK as its own error classes: a
    // wrong key, then a model no pool answers to.
    const bad = azure
      ? new AzureOpenAI({ endpoint: gatewayURL(), apiKey: 'not-a-key-of-this-gateway', apiVersion, deployment: model(), maxRetries: 0 })
      : new OpenAI({ baseURL: gatewayURL() + '/v1', apiKey: 'not-a-key-of-this-gateway', maxRetries: 0 });
    await assert.rejects(bad.chat.completions.create({ model: model(), messages }), (e) => {
      assert.ok(e instanceof OpenAI.AuthenticationError, `${e.constructor.name} ${e.status}: ${e.message}`);
      assert.doesNotMatch(e.message, /not-a-key-of-this-gateway/, 'the key is echoed');
      return true;
    });
    const other = azure
      ? new AzureOpenAI({ endpoint: gatewayURL(), apiKey: gatewayKey(), apiVersion, deployment: 'no-such-pool', maxRetries: 0 })
      : openai;
    await assert.rejects(other.chat.completions.create({ model: 'no-such-pool', messages }), (e) => {
      assert.ok(e instanceof OpenAI.APIError && [400, 404].includes(e.status), `${e.constructor.name} ${e.status}: ${e.message}`);
      text(e.message, 'message');
      return true;
    });
    return 'AuthenticationError, then a 400/404 APIError for an unknown model';
  },

  async responses_create() {
    const r = await v1().responses.create({ model: model(), input: 'Say hello.', max_output_tokens: 30 });
    responseShape(r);
    return `${r.id}: ${r.output_text}`;
  },

  async responses_stream() {
    const s = v1().responses.stream({ model: model(), input: 'Say hello.', max_output_tokens: 30 });
    const types = new Set();
    let delta = '';
    for await (const ev of s) {
      types.add(ev.type);
      if (ev.type === 'response.output_text.delta') delta += ev.delta;
    }
    const r = await s.finalResponse();
    for (const t of ['response.created', 'response.output_text.delta', 'response.completed']) {
      assert.ok(types.has(t), `no ${t} event; saw ${[...types].join(' ')}`);
    }
    responseShape(r);
    assert.equal(delta, r.output_text, 'deltas differ from the final text');
    return `${types.size} event types: ${r.output_text}`;
  },

  async responses_stored() {
    // create, retrieve, a follow-up with previous_response_id, input items,
    // delete, then retrieve again: 404.
    const c = v1();
    const r = await c.responses.create({ model: model(), input: 'Remember: blue.', max_output_tokens: 20 });
    responseShape(r);
    const got = await c.responses.retrieve(r.id);
    assert.equal(got.id, r.id);
    assert.equal(got.output_text, r.output_text);
    const next = await c.responses.create({ model: model(), input: 'Which colour?', previous_response_id: r.id, max_output_tokens: 20 });
    responseShape(next);
    assert.equal(next.previous_response_id, r.id);
    const items = await c.responses.inputItems.list(next.id);
    assert.ok(items.data.length >= 1, 'no input items');
    await c.responses.delete(next.id);
    await c.responses.delete(r.id);
    await assert.rejects(c.responses.retrieve(r.id), (e) => e.status === 404, 'retrieve after delete');
    return `${r.id} -> ${next.id}, deleted`;
  },

  async responses_deployment_client() {
    // The AzureOpenAI client made with a deployment: this SDK version
    // sends Responses to /openai/responses?api-version=… with the
    // deployment as the model (the gateway answers a deployment path,
    // /openai/deployments/{d}/responses, with Azure's 404 instead).
    assert.ok(azure, 'an Azure check');
    const r = await openai.responses.create({ model: model(), input: 'Say hello.', max_output_tokens: 30 });
    responseShape(r);
    return `${r.id}: ${r.output_text}`;
  },

  async responses_background() {
    const c = v1();
    const r = await c.responses.create({ model: model(), input: 'Say hello.', background: true, max_output_tokens: 20 });
    assert.equal(r.object, 'response');
    assert.ok(['queued', 'in_progress', 'completed'].includes(r.status), `status ${r.status}`);
    let got = r;
    for (let i = 0; i < 200 && got.status !== 'completed'; i++) {
      await new Promise((res) => setTimeout(res, 50));
      got = await c.responses.retrieve(r.id);
    }
    assert.equal(got.status, 'completed');
    return `${r.status} -> ${got.status}`;
  },

  async responses_compact() {
    const c = v1();
    const r = await c.responses.compact({
      model: model(),
      input: [
        { role: 'user', content: 'Tell me about the sea.' },
        { role: 'assistant', content: 'The sea is large and blue.' },
      ],
    });
    assert.equal(r.object, 'response.compaction');
    assert.ok(Array.isArray(r.output) && r.output.length > 0, 'no output');
    text(r.id, 'id');
    return `${r.output.length} items: ${r.output.map((o) => o.type).join(',')}`;
  },

  async embeddings() {
    const e = await openai.embeddings.create({ model: model(), input: ['one', 'two'] });
    assert.equal(e.object, 'list');
    assert.equal(e.data.length, 2);
    for (const d of e.data) {
      assert.equal(d.object, 'embedding');
      assert.ok(Array.isArray(d.embedding) && d.embedding.length > 0 && typeof d.embedding[0] === 'number', 'embedding vector');
    }
    usage(e.usage, 'prompt_tokens');
    return `${e.data.length} x ${e.data[0].embedding.length}`;
  },

  async moderations() {
    const m = await openai.moderations.create({ model: model(), input: 'I like kittens.' });
    text(m.id, 'id');
    assert.equal(m.results.length, 1);
    assert.equal(typeof m.results[0].flagged, 'boolean');
    assert.equal(typeof m.results[0].categories, 'object');
    return `flagged=${m.results[0].flagged}`;
  },

  async images() {
    const im = await openai.images.generate({ model: model(), prompt: 'a lighthouse', n: 1, size: '256x256', response_format: 'b64_json' });
    assert.ok(Number.isInteger(im.created), 'created');
    assert.equal(im.data.length, 1);
    assert.ok(im.data[0].b64_json || im.data[0].url, 'no image');
    return im.data[0].b64_json ? `b64 ${im.data[0].b64_json.length} chars` : im.data[0].url;
  },

  async audio_speech() {
    const r = await openai.audio.speech.create({ model: model(), voice: 'alloy', input: 'Hello there.', response_format: 'wav' });
    const buf = Buffer.from(await r.arrayBuffer());
    assert.ok(buf.length > 44, `speech: ${buf.length} bytes`);
    return `${buf.length} bytes, ${r.headers.get('content-type')}`;
  },

  async audio_transcription() {
    const speech = await openai.audio.speech.create({ model: model(), voice: 'alloy', input: 'Hello there.', response_format: 'wav' });
    const file = await toFile(Buffer.from(await speech.arrayBuffer()), 'hello.wav', { type: 'audio/wav' });
    const t = await openai.audio.transcriptions.create({ model: model(), file });
    text(t.text, 'transcription text');
    return t.text;
  },

  async files_batches() {
    const c = v1();
    const line = JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: model(), messages, max_tokens: 5 } });
    const f = await c.files.create({ file: await toFile(Buffer.from(line + '\n'), 'batch.jsonl'), purpose: 'batch' });
    text(f.id, 'file id');
    assert.equal(f.purpose, 'batch');
    const got = await c.files.retrieve(f.id);
    assert.equal(got.id, f.id);
    const content = await (await c.files.content(f.id)).text();
    assert.equal(content.trim(), line);
    const b = await c.batches.create({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    assert.equal(b.object, 'batch');
    assert.equal(b.input_file_id, f.id);
    const gb = await c.batches.retrieve(b.id);
    assert.equal(gb.id, b.id);
    const cancelled = await c.batches.cancel(b.id);
    assert.ok(['cancelling', 'cancelled', 'completed', 'finalizing'].includes(cancelled.status), `cancel: ${cancelled.status}`);
    const page = await c.files.list();
    assert.ok(page.data.some((x) => x.id === f.id), 'file not listed');
    const del = await c.files.delete(f.id);
    assert.equal(del.deleted, true);
    return `${f.id}, ${b.id} ${cancelled.status}`;
  },

  async realtime() {
    const base = env('SWITCHOVER_WSS_URL').replace(/\/+$/, '');
    const c = azure
      ? await OpenAIRealtimeWS.azure(new AzureOpenAI({ endpoint: base, apiKey: gatewayKey(), apiVersion, maxRetries: 0 }), { deploymentName: model() })
      : new OpenAIRealtimeWS({ model: model() }, new OpenAI({ baseURL: base + '/v1', apiKey: gatewayKey(), maxRetries: 0 }));
    const seen = [];
    try {
      const done = new Promise((resolve, reject) => {
        c.on('error', (e) => reject(e));
        c.on('event', (e) => seen.push(e.type));
        c.on('response.done', (e) => resolve(e.response));
        c.socket.on('close', (code) => reject(new Error(`socket closed (${code}) after ${seen.join(' ')}`)));
      });
      await new Promise((resolve, reject) => {
        c.socket.on('open', resolve);
        c.socket.on('error', reject);
      });
      c.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'] } });
      c.send({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Say hello.' }] } });
      c.send({ type: 'response.create' });
      const r = await done;
      assert.ok(seen.includes('session.created'), `no session.created: ${seen.join(' ')}`);
      assert.equal(r.status, 'completed');
      return seen.join(' ');
    } finally {
      c.close();
    }
  },
};

await run(checks);

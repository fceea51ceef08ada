// The Vercel AI SDK (ai, @ai-sdk/openai, @ai-sdk/anthropic) through the
// gateway: generateText and streamText, with a tool loop, by the OpenAI
// provider's default model (the Responses API) and its chat model, and by
// the Anthropic provider. The providers validate every answer against
// their schemas, so a field of the wrong type fails here. See lib.mjs for
// the environment.

import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { assert, gatewayKey, gatewayURL, model, run, text, weatherTool } from './lib.mjs';

const openai = createOpenAI({ baseURL: gatewayURL() + '/v1', apiKey: gatewayKey() });
const anthropic = createAnthropic({ baseURL: gatewayURL() + '/v1', apiKey: gatewayKey() });
const prompt = 'Say hello in three words.';

function tools() {
  let called = 0;
  return {
    calls: () => called,
    tools: {
      get_weather: tool({
        description: weatherTool.description,
        inputSchema: jsonSchema(weatherTool.parameters),
        execute: async () => {
          called++;
          return { temp_c: 18 };
        },
      }),
    },
  };
}

async function generate(m) {
  const r = await generateText({ model: m, prompt, maxOutputTokens: 30, maxRetries: 0 });
  text(r.text, 'text');
  assert.ok(['stop', 'length'].includes(r.finishReason), `finishReason ${r.finishReason}`);
  assert.ok(r.usage.inputTokens > 0 && r.usage.outputTokens > 0, `usage ${JSON.stringify(r.usage)}`);
  return r.text;
}

async function stream(m) {
  const errors = [];
  const r = streamText({ model: m, prompt, maxOutputTokens: 30, maxRetries: 0, onError: ({ error }) => errors.push(error) });
  let out = '';
  for await (const part of r.textStream) out += part;
  if (errors.length) throw errors[0];
  text(out, 'streamed text');
  assert.equal(await r.text, out);
  const u = await r.usage;
  assert.ok(u.outputTokens > 0, `usage ${JSON.stringify(u)}`);
  return out;
}

async function toolLoop(m) {
  const t = tools();
  const r = await generateText({
    model: m, prompt: 'What is the weather in Paris?', maxOutputTokens: 100, maxRetries: 0,
    tools: t.tools, stopWhen: stepCountIs(3),
  });
  assert.ok(t.calls() >= 1, `the tool was not called: ${JSON.stringify(r.steps.map((s) => s.finishReason))}`);
  assert.ok(r.steps.length >= 2, `${r.steps.length} steps`);
  text(r.text, 'final text');
  return `${t.calls()} call(s), ${r.steps.length} steps: ${r.text}`;
}

const checks = {
  openai_generate: () => generate(openai(model())),
  openai_stream: () => stream(openai(model())),
  openai_tools: () => toolLoop(openai(model())),
  openai_chat_generate: () => generate(openai.chat(model())),
  anthropic_generate: () => generate(anthropic(model())),
  anthropic_stream: () => stream(anthropic(model())),
  anthropic_tools: () => toolLoop(anthropic(model())),
};

await run(checks);

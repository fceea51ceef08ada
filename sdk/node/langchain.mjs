// LangChain JS (@langchain/openai, @langchain/anthropic) through the
// gateway: invoke, stream and a tool call by the OpenAI chat model (and
// invoke through the Responses API), and
// invoke and stream by the Anthropic chat model. See lib.mjs for the
// environment.

import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { assert, gatewayKey, gatewayURL, model, run, text, weatherTool } from './lib.mjs';

const prompt = 'Say hello in three words.';
const openai = () => new ChatOpenAI({ model: model(), apiKey: gatewayKey(), maxTokens: 30, maxRetries: 0, configuration: { baseURL: gatewayURL() + '/v1' } });
const anthropic = () => new ChatAnthropic({ model: model(), apiKey: gatewayKey(), maxTokens: 30, maxRetries: 0, anthropicApiUrl: gatewayURL() });

async function invoke(chat) {
  const m = await chat.invoke(prompt);
  text(m.text, 'text');
  assert.ok(m.usage_metadata?.output_tokens > 0, `usage_metadata ${JSON.stringify(m.usage_metadata)}`);
  return m.text;
}

async function stream(chat) {
  let out = '', chunks = 0;
  for await (const c of await chat.stream(prompt)) {
    chunks++;
    out += c.text;
  }
  text(out, 'streamed text');
  return `${chunks} chunks: ${out}`;
}

const checks = {
  openai_invoke: () => invoke(openai()),
  openai_stream: () => stream(openai()),
  async openai_tools() {
    const chat = openai().bindTools([{ type: 'function', function: weatherTool }]);
    const m = await chat.invoke('What is the weather in Paris?');
    assert.equal(m.tool_calls?.length, 1, `tool_calls ${JSON.stringify(m.tool_calls)}`);
    assert.equal(m.tool_calls[0].name, 'get_weather');
    assert.equal(typeof m.tool_calls[0].args, 'object');
    return `${m.tool_calls[0].name}(${JSON.stringify(m.tool_calls[0].args)})`;
  },
  openai_responses_invoke: () => invoke(new ChatOpenAI({
    model: model(), apiKey: gatewayKey(), maxTokens: 30, maxRetries: 0, useResponsesApi: true,
    configuration: { baseURL: gatewayURL() + '/v1' },
  })),
  anthropic_invoke: () => invoke(anthropic()),
  anthropic_stream: () => stream(anthropic()),
};

await run(checks);

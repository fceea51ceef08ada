// Google's Gen AI SDK (@google/genai) through the gateway's Gemini
// inbound API (/v1beta/models/{model}:generateContent and the rest).
// Run by gateway/sdk_node_test.go's TestSDKNodeGemini. See lib.mjs for
// the environment.

import { GoogleGenAI } from '@google/genai';
import { assert, gatewayKey, gatewayURL, model, run, text, weatherTool } from './lib.mjs';

const ai = new GoogleGenAI({ apiKey: gatewayKey(), httpOptions: { baseUrl: gatewayURL(), apiVersion: 'v1beta' } });
const contents = 'Say hello in three words.';

function answerShape(r) {
  assert.ok(Array.isArray(r.candidates) && r.candidates.length >= 1, 'no candidates');
  const c = r.candidates[0];
  assert.equal(c.content.role, 'model');
  assert.ok(c.finishReason, 'no finishReason');
  assert.ok(r.usageMetadata?.promptTokenCount > 0, `usageMetadata ${JSON.stringify(r.usageMetadata)}`);
}

const checks = {
  async generate() {
    const r = await ai.models.generateContent({ model: model(), contents, config: { maxOutputTokens: 30 } });
    answerShape(r);
    return text(r.text, 'text');
  },

  async stream() {
    let out = '', chunks = 0, last = null;
    for await (const c of await ai.models.generateContentStream({ model: model(), contents, config: { maxOutputTokens: 30 } })) {
      chunks++;
      out += c.text ?? '';
      last = c;
    }
    text(out, 'streamed text');
    assert.ok(last?.candidates?.[0]?.finishReason, 'no finishReason on the last chunk');
    return `${chunks} chunks: ${out}`;
  },

  async tools() {
    const r = await ai.models.generateContent({
      model: model(), contents: 'What is the weather in Paris?',
      config: { tools: [{ functionDeclarations: [{ name: weatherTool.name, description: weatherTool.description, parametersJsonSchema: weatherTool.parameters }] }] },
    });
    answerShape(r);
    const calls = r.functionCalls ?? [];
    assert.equal(calls.length, 1, `functionCalls ${JSON.stringify(calls)}`);
    assert.equal(calls[0].name, 'get_weather');
    assert.equal(typeof calls[0].args, 'object');
    return `${calls[0].name}(${JSON.stringify(calls[0].args)})`;
  },

  async count_tokens() {
    const r = await ai.models.countTokens({ model: model(), contents });
    assert.ok(r.totalTokens > 0, `totalTokens ${r.totalTokens}`);
    return `${r.totalTokens} tokens`;
  },

  async embed() {
    // For the Gemini API this SDK calls :batchEmbedContents, never
    // :embedContent, whatever the number of contents.
    const r = await ai.models.embedContent({ model: model(), contents: ['one', 'two'] });
    assert.equal(r.embeddings?.length, 2, `embeddings ${r.embeddings?.length}`);
    assert.ok(r.embeddings[0].values.length > 0, 'empty vector');
    return `${r.embeddings.length} x ${r.embeddings[0].values.length}`;
  },
};

await run(checks);

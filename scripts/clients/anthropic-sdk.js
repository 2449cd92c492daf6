// anthropic-sdk.js: one conversation with a tool through Anthropic's
// TypeScript SDK (npm @anthropic-ai/sdk) against the gateway's
// /v1/messages, as an application written for the Messages API runs it.
//
//   node anthropic-sdk.js whole|stream BASE_URL
//
// The first request asks for hermes-test-model-2, offers lookup_order and
// requires it by tool_choice; the model must answer with a tool_use of it.
// The script runs the tool and sends the whole conversation back with a
// tool_result; the model must answer text quoting the result. With whole,
// it then sends a request with no message, which the API refuses: the SDK
// must raise its BadRequestError with the API's error type. It prints
// what happened, and exits 1 when any of that did not happen.
'use strict';

const Anthropic = require('@anthropic-ai/sdk');

const MODEL = 'hermes-test-model-2';
const MAX_TOKENS = 300;
const RESULT = 'order A-17: shipped on 2026-11-20';

const tools = [{
  name: 'lookup_order',
  description: 'Finds an order by its number.',
  input_schema: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
}];

async function turn(client, stream, params) {
  if (!stream) return client.messages.create(params);
  return client.messages.stream(params).finalMessage();
}

async function main() {
  const [mode, baseURL] = process.argv.slice(2);
  if (!['whole', 'stream'].includes(mode) || !baseURL) {
    throw new Error('usage: node anthropic-sdk.js whole|stream BASE_URL');
  }
  const client = new Anthropic({ baseURL, apiKey: 'unused', maxRetries: 0 });
  const stream = mode === 'stream';
  const messages = [{ role: 'user', content: 'Where is my order A-17?' }];
  const first = await turn(client, stream, {
    model: MODEL, max_tokens: MAX_TOKENS, messages, tools, tool_choice: { type: 'tool', name: 'lookup_order' },
  });
  const call = first.content.find((b) => b.type === 'tool_use');
  if (first.stop_reason !== 'tool_use' || !call || call.name !== 'lookup_order' || call.input.order_id !== 'A-17') {
    throw new Error(`the model did not call lookup_order with A-17: ${JSON.stringify(first)}`);
  }
  console.log(`turn 1: tool_use ${call.name}(${JSON.stringify(call.input)})`);
  messages.push({ role: 'assistant', content: first.content });
  messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: RESULT }] });
  const second = await turn(client, stream, { model: MODEL, max_tokens: MAX_TOKENS, messages, tools });
  const text = second.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  if (second.stop_reason !== 'end_turn' || !text.includes(RESULT)) {
    throw new Error(`the answer does not quote the tool's result: ${JSON.stringify(second)}`);
  }
  console.log(`turn 2: ${text}`);
  if (stream) return;
  try {
    await client.messages.create({ model: MODEL, max_tokens: MAX_TOKENS, messages: [] });
  } catch (err) {
    if (err instanceof Anthropic.BadRequestError && err.status === 400 && err.error?.error?.type === 'invalid_request_error') {
      console.log(`refused: ${err.error.error.message}`);
      return;
    }
    throw new Error(`a request with no message: ${err}, want a BadRequestError of type invalid_request_error`);
  }
  throw new Error('a request with no message was answered');
}

main().catch((err) => {
  console.error(`anthropic-sdk.js: ${err.message}`);
  process.exit(1);
});

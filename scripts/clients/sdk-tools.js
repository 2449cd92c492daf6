// sdk-tools.js: one conversation with a function tool through the openai
// SDK, as an application with functions runs it against an
// OpenAI-compatible server.
//
//   node sdk-tools.js chat|responses whole|stream BASE_URL
//
// The first request asks for hermes-test-model-2, offers lookup_order,
// requires it by tool_choice and sets the sampling parameters below; the model must answer with a call to
// it. The script runs the function, sends its result (chat: the whole
// conversation with the tool message; responses: the function_call_output
// with previous_response_id), with tool_choice auto, and the model must
// answer text quoting the result. It prints what happened, and exits 1
// when the model did not call the tool, or its last answer does not hold
// the result.
'use strict';

const OpenAI = require('openai');

// Not the gateway's model (hermes-test-model): the model must receive the
// one the client asks for.
const MODEL = 'hermes-test-model-2';
// The values clients.sh looks for in the model's log; each differs from
// any default, so that a value the model received was the client's.
const TEMPERATURE = 0.25;
const TOP_P = 0.5;
const MAX_TOKENS = 300;
const SEED = 7;
const RESULT = 'order A-17: shipped on 2026-11-20';

const parameters = {
  type: 'object',
  properties: { order_id: { type: 'string', description: 'the order number, e.g. A-17' } },
  required: ['order_id'],
  additionalProperties: false,
};

function lookupOrder(args) {
  const { order_id: id } = JSON.parse(args);
  if (id !== 'A-17') throw new Error(`lookup_order: no order ${JSON.stringify(id)}`);
  return RESULT;
}

async function chat(client, stream) {
  const tools = [{ type: 'function', function: { name: 'lookup_order', description: 'Finds an order by its number.', parameters, strict: true } }];
  const messages = [{ role: 'user', content: 'Where is my order A-17?' }];
  const first = await chatTurn(client, stream, {
    model: MODEL,
    messages,
    tools,
    tool_choice: { type: 'function', function: { name: 'lookup_order' } },
    parallel_tool_calls: false,
    temperature: TEMPERATURE,
    top_p: TOP_P,
    max_completion_tokens: MAX_TOKENS,
    seed: SEED,
  });
  const call = (first.tool_calls || [])[0];
  if (!call || call.function.name !== 'lookup_order') {
    throw new Error(`the model did not call lookup_order; it said: ${JSON.stringify(first.content)}`);
  }
  console.log(`model called ${call.function.name}(${call.function.arguments})`);
  messages.push(first, { role: 'tool', tool_call_id: call.id, content: lookupOrder(call.function.arguments) });
  const second = await chatTurn(client, stream, { model: MODEL, messages, tools, tool_choice: 'auto' });
  return second.content;
}

// chatTurn returns the assistant message, assembled from the chunks when
// streamed.
async function chatTurn(client, stream, params) {
  if (!stream) return (await client.chat.completions.create(params)).choices[0].message;
  const message = { role: 'assistant', content: null };
  const calls = [];
  for await (const chunk of await client.chat.completions.create({ ...params, stream: true })) {
    const delta = (chunk.choices[0] || {}).delta || {};
    if (delta.content) message.content = (message.content || '') + delta.content;
    for (const d of delta.tool_calls || []) {
      const c = calls[d.index] || (calls[d.index] = { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (d.id) c.id = d.id;
      if (d.function && d.function.name) c.function.name += d.function.name;
      if (d.function && d.function.arguments) c.function.arguments += d.function.arguments;
    }
  }
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

async function responses(client, stream) {
  const tools = [{ type: 'function', name: 'lookup_order', description: 'Finds an order by its number.', parameters, strict: true }];
  const first = await responsesTurn(client, stream, {
    model: MODEL,
    input: [{ role: 'user', content: 'Where is my order A-17?' }],
    tools,
    tool_choice: { type: 'function', name: 'lookup_order' },
    parallel_tool_calls: false,
    temperature: TEMPERATURE,
    top_p: TOP_P,
    max_output_tokens: MAX_TOKENS,
  });
  const call = first.output.find((item) => item.type === 'function_call');
  if (!call || call.name !== 'lookup_order') {
    throw new Error(`the model did not call lookup_order; it said: ${JSON.stringify(first.output_text)}`);
  }
  console.log(`model called ${call.name}(${call.arguments})`);
  const second = await responsesTurn(client, stream, {
    model: MODEL,
    previous_response_id: first.id,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: lookupOrder(call.arguments) }],
    tools,
    tool_choice: 'auto',
  });
  return second.output_text;
}

// responsesTurn returns the response, the one response.completed carries
// when streamed.
async function responsesTurn(client, stream, params) {
  if (!stream) return client.responses.create(params);
  let done = null;
  for await (const event of await client.responses.create({ ...params, stream: true })) {
    if (event.type === 'response.completed') done = event.response;
    if (event.type === 'response.failed' || event.type === 'error') throw new Error(`the stream failed: ${JSON.stringify(event)}`);
  }
  if (!done) throw new Error('the stream ended without response.completed');
  done.output_text = done.output.filter((i) => i.type === 'message')
    .flatMap((i) => i.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');
  return done;
}

async function main() {
  const [kind, mode, baseURL] = process.argv.slice(2);
  if (!['chat', 'responses'].includes(kind) || !['whole', 'stream'].includes(mode) || !baseURL) {
    console.error('usage: node sdk-tools.js chat|responses whole|stream BASE_URL');
    process.exit(2);
  }
  // maxRetries 0: a retry would be a request of its own, and clients.sh
  // counts what each scenario's requests create.
  const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
  const text = await (kind === 'chat' ? chat : responses)(client, mode === 'stream');
  console.log(`model answered: ${text}`);
  if (typeof text !== 'string' || !text.includes(RESULT)) {
    throw new Error(`the answer does not hold the tool's result ${JSON.stringify(RESULT)}`);
  }
}

main().catch((err) => {
  console.error(`sdk-tools: ${err.message}`);
  process.exit(1);
});

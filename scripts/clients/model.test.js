// model.test.js: the strict test model answers as clients.sh needs it to,
// and refuses what it must. Run by clients.sh before its scenarios:
//
//   node --test scripts/clients/
'use strict';

const assert = require('assert');
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const readline = require('readline');
const { after, before, test } = require('node:test');

let model;
let url;
let logPath;

before(async () => {
  logPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'model-test-')), 'model.jsonl');
  model = spawn(process.execPath, [path.join(__dirname, 'model.js'), logPath], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: model.stdout });
  url = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    model.once('exit', (code) => reject(new Error(`model.js exited with ${code}`)));
  });
});

after(() => {
  model.kill();
  fs.rmSync(path.dirname(logPath), { recursive: true, force: true });
});

async function post(body, headers = { Authorization: 'Bearer k' }) {
  const res = await fetch(url + '/chat/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, json: res.headers.get('content-type') === 'application/json' ? JSON.parse(text) : null };
}

const MODEL = 'hermes-test-model';
const user = { role: 'user', content: 'where is A-17?' };
const lookup = { type: 'function', function: { name: 'lookup_order', parameters: { type: 'object', properties: { order_id: { type: 'string' } } } } };
const other = { type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } };

// call returns the message and tool call of a whole answer, after checking
// there is one.
async function call(body) {
  const r = await post(body);
  assert.strictEqual(r.status, 200, r.text);
  const choice = r.json.choices[0];
  assert.strictEqual(choice.finish_reason, 'tool_calls', r.text);
  return { message: choice.message, call: choice.message.tool_calls[0] };
}

test('no tools offered: text that says so', async () => {
  const r = await post({ model: MODEL, messages: [user] });
  assert.strictEqual(r.status, 200, r.text);
  assert.strictEqual(r.json.choices[0].message.content, 'no tools were offered to this model');
  assert.strictEqual(r.json.choices[0].message.tool_calls, undefined);
});

test('tools offered: it calls the one it knows, then answers with its result', async () => {
  const { message, call: c } = await call({ model: MODEL, messages: [user], tools: [other, lookup] });
  assert.strictEqual(c.function.name, 'lookup_order');
  assert.deepStrictEqual(JSON.parse(c.function.arguments), { order_id: 'A-17' });
  const r = await post({ model: MODEL, messages: [user, message, { role: 'tool', tool_call_id: c.id, content: 'shipped' }], tools: [other, lookup] });
  assert.strictEqual(r.status, 200, r.text);
  assert.strictEqual(r.json.choices[0].message.content, 'the tool said: shipped');
});

test('an MCP server\'s tool is called before the client\'s own', async () => {
  const mcp = { type: 'function', function: { name: 'mcp__hermes__kanban_create', parameters: { type: 'object' } } };
  const { call: c } = await call({ model: MODEL, messages: [user], tools: [lookup, mcp] });
  assert.strictEqual(c.function.name, 'mcp__hermes__kanban_create');
  assert.deepStrictEqual(JSON.parse(c.function.arguments), { title: 'made-by-codex-42' });
});

test('the second model is served, and named in the answer', async () => {
  const r = await post({ model: 'hermes-test-model-2', messages: [user] });
  assert.strictEqual(r.status, 200, r.text);
  assert.strictEqual(r.json.model, 'hermes-test-model-2');
});

test('tools offered, none it knows: text naming them', async () => {
  const r = await post({ model: MODEL, messages: [user], tools: [other] });
  assert.strictEqual(r.status, 200, r.text);
  assert.match(r.json.choices[0].message.content, /read_file/);
});

test('tool_choice required: a call even after a tool result; none: text', async () => {
  const { message, call: c } = await call({ model: MODEL, messages: [user], tools: [lookup] });
  const messages = [user, message, { role: 'tool', tool_call_id: c.id, content: 'shipped' }];
  await call({ model: MODEL, messages, tools: [lookup], tool_choice: 'required' });
  const r = await post({ model: MODEL, messages: [user], tools: [lookup], tool_choice: 'none' });
  assert.strictEqual(r.json.choices[0].message.content, 'no tools were offered to this model');
});

test('streamed: the chunks make the call, with usage when asked', async () => {
  const r = await post({ model: MODEL, messages: [user], tools: [lookup], stream: true, stream_options: { include_usage: true } });
  assert.strictEqual(r.status, 200, r.text);
  const events = r.text.split('\n\n').filter((e) => e !== '').map((e) => e.replace(/^data: /, ''));
  assert.strictEqual(events.pop(), '[DONE]');
  const chunks = events.map((e) => JSON.parse(e));
  let args = '';
  let name = '';
  for (const ch of chunks) {
    for (const d of (ch.choices[0] || { delta: {} }).delta.tool_calls || []) {
      name += (d.function && d.function.name) || '';
      args += (d.function && d.function.arguments) || '';
    }
  }
  assert.strictEqual(name, 'lookup_order');
  assert.deepStrictEqual(JSON.parse(args), { order_id: 'A-17' });
  assert.ok(chunks[chunks.length - 1].usage.total_tokens > 0);
});

test('refused as the real API refuses them', async () => {
  const { message, call: c } = await call({ model: MODEL, messages: [user], tools: [lookup] });
  const forged = { role: 'assistant', content: null, tool_calls: [{ id: 'call_forged', type: 'function', function: { name: 'lookup_order', arguments: '{}' } }] };
  const cases = [
    ['an unknown role', { model: MODEL, messages: [{ role: 'robot', content: 'hi' }] }, 400, /'robot'/],
    ['a tool message answering no call', { model: MODEL, messages: [user, { role: 'tool', tool_call_id: c.id, content: 'x' }] }, 400, /must be a response/],
    ['a tool message with another id', { model: MODEL, messages: [user, message, { role: 'tool', tool_call_id: 'call_other', content: 'x' }] }, 400, /must be a response/],
    ['a call left unanswered', { model: MODEL, messages: [user, message, user] }, 400, /did not have response messages/],
    ['a call this model never made', { model: MODEL, messages: [user, forged, { role: 'tool', tool_call_id: 'call_forged', content: 'x' }] }, 400, /call_forged/],
    ['a Responses parameter', { model: MODEL, messages: [user], max_output_tokens: 10 }, 400, /Unrecognized request argument supplied: max_output_tokens/],
    ['tool_choice without tools', { model: MODEL, messages: [user], tool_choice: 'auto' }, 400, /only allowed when 'tools'/],
    ['tool_choice naming a tool not offered', { model: MODEL, messages: [user], tools: [lookup], tool_choice: { type: 'function', function: { name: 'read_file' } } }, 400, /read_file/],
    ['parallel_tool_calls without tools', { model: MODEL, messages: [user], parallel_tool_calls: false }, 400, /parallel_tool_calls/],
    ['both token limits', { model: MODEL, messages: [user], max_tokens: 10, max_completion_tokens: 10 }, 400, /at the same time/],
    ['stream_options without stream', { model: MODEL, messages: [user], stream_options: { include_usage: true } }, 400, /stream_options/],
    ['a temperature out of range', { model: MODEL, messages: [user], temperature: 3 }, 400, /temperature/],
    ['a tool type of the Responses API', { model: MODEL, messages: [user], tools: [{ type: 'web_search' }] }, 400, /web_search/],
    ['a Responses-shaped function tool', { model: MODEL, messages: [user], tools: [{ type: 'function', name: 'lookup_order' }] }, 400, /tools\[0\]\.function/],
    ['no messages', { model: MODEL, messages: [] }, 400, /messages/],
    ['another model', { model: 'gpt-9', messages: [user] }, 404, /gpt-9/],
  ];
  for (const [what, body, status, message] of cases) {
    const r = await post(body);
    assert.strictEqual(r.status, status, `${what}: ${r.text}`);
    assert.match(r.json.error.message, message, what);
  }
  assert.strictEqual((await post({ model: MODEL, messages: [user] }, {})).status, 401, 'no API key');
});

test('every request is logged, refused ones with their error', async () => {
  const entries = fs.readFileSync(logPath, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(entries.some((e) => e.status === 200 && e.body.tools && e.reply.call));
  const refused = entries.find((e) => e.status === 400 && e.body.messages && e.body.messages[0].role === 'robot');
  assert.match(refused.error, /robot/);
});

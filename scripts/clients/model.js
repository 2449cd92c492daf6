// model.js: a strict test model for scripts/clients.sh, an OpenAI-compatible
// chat completions server that the gateway's openai provider uses as its
// base URL. It records every request it receives, and answers like a real
// model that calls only the tools it was offered.
//
//   node model.js LOG
//
// It listens on a free loopback port and prints its base URL
// (http://127.0.0.1:PORT/v1) as its first line on stdout. LOG gets one JSON
// line per request: the path, the body as received, the status answered,
// the error when it refused the request, and what it answered.
//
// It serves two models, hermes-test-model and hermes-test-model-2 (404
// model_not_found for any other, as OpenAI answers): a client that asks for
// the second through a gateway configured with the first shows whether the
// request's model reached it. It wants an Authorization header. It refuses
// with 400 what the real API refuses that matters to a gateway passing a
// client's request on: a parameter the chat completions API does not have
// (a Responses name such as max_output_tokens left untranslated), an
// unknown role (and 'function', the deprecated one), a tool type other
// than function and custom, a tool message that answers no tool call of
// the assistant message before it, a tool call left unanswered,
// tool_choice or parallel_tool_calls without tools, tool_choice naming a
// tool not offered, stream_options without stream, both token limits at
// once, and values out of range. Stricter than the real API, it also
// refuses an assistant tool call whose id it never issued: a gateway must
// not make calls up.
//
// Its answer: when the request offers tools and the conversation does not
// end with a tool result (or tool_choice requires a call), it calls the
// tool that tool_choice names, else the first offered tool it knows (see
// KNOWN_TOOLS), an MCP server's (mcp__SERVER__TOOL) before the client's
// own, with valid arguments. When the conversation ends with a
// tool result, it answers "the tool said: " and the result's last line.
// When no tools are offered, it says so in text, and a client waiting for
// a tool call fails. Streamed (with usage when stream_options asks) or
// whole, as the request says.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');

const MODELS = ['hermes-test-model', 'hermes-test-model-2'];

// The tools it can call, by name, with the arguments it sends.
const KNOWN_TOOLS = {
  // Codex CLI 0.169's shell tool. The arithmetic is the shell's, so the
  // result it sends back proves the command ran.
  exec_command: () => ({ cmd: 'echo tool-ran-$((6*7))', login: false }),
  // Older Codex CLIs' shell tool.
  shell: () => ({ command: ['bash', '-c', 'echo tool-ran-$((6*7))'] }),
  // The function of scripts/clients/sdk-tools.js and vercel.js.
  lookup_order: () => ({ order_id: 'A-17' }),
  // hermes mcp serve's, as Codex CLI offers an MCP server's tools (its
  // namespace mcp__hermes, which the gateway names mcp__SERVER__TOOL).
  mcp__hermes__kanban_create: () => ({ title: 'made-by-codex-' + 6 * 7 }),
};

// The chat completions request's parameters; any other is refused.
const PARAMS = new Set([
  'model', 'messages', 'tools', 'tool_choice', 'parallel_tool_calls', 'stream', 'stream_options',
  'temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'seed', 'presence_penalty',
  'frequency_penalty', 'response_format', 'reasoning_effort', 'user', 'n', 'logprobs', 'top_logprobs',
  'logit_bias', 'metadata', 'store', 'service_tier', 'modalities', 'audio', 'prediction',
  'web_search_options', 'verbosity', 'prompt_cache_key', 'safety_identifier', 'functions', 'function_call',
]);
// 'function', the deprecated role of tool results, is refused too: the
// gateway has no reason to send it.
const ROLES = ['system', 'developer', 'user', 'assistant', 'tool'];
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

class Refusal extends Error {
  constructor(status, message, param, code) {
    super(message);
    this.status = status;
    this.param = param || null;
    this.code = code || null;
    this.type = 'invalid_request_error';
  }
}

function bad(message, param, code) {
  return new Refusal(400, message, param, code);
}

const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);

function number(body, name, lo, hi) {
  if (body[name] === undefined || body[name] === null) return;
  const v = body[name];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`Invalid type for '${name}': expected a number.`, name);
  if (v < lo || v > hi) throw bad(`Invalid '${name}': ${v} is not between ${lo} and ${hi}.`, name);
}

function positiveInteger(body, name) {
  if (body[name] === undefined || body[name] === null) return;
  if (!Number.isInteger(body[name]) || body[name] < 1) {
    throw bad(`Invalid '${name}': expected an integer of at least 1, got ${JSON.stringify(body[name])}.`, name);
  }
}

// textContent checks a message's content: a string, or a list of parts
// whose types the role allows.
function textContent(content, where, partTypes) {
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) throw bad(`Invalid type for '${where}.content': expected a string or an array.`, `${where}.content`);
  content.forEach((part, j) => {
    if (!isObject(part) || !partTypes.includes(part.type)) {
      throw bad(`Invalid value: '${isObject(part) ? part.type : typeof part}'. Supported values are: ${partTypes.map((t) => `'${t}'`).join(', ')}.`, `${where}.content[${j}].type`);
    }
  });
}

// offeredTools checks tools and returns their names, by type.
function offeredTools(body) {
  const names = new Map();
  if (body.tools === undefined || body.tools === null) return names;
  if (!Array.isArray(body.tools)) throw bad("Invalid type for 'tools': expected an array.", 'tools');
  body.tools.forEach((t, i) => {
    const where = `tools[${i}]`;
    if (!isObject(t) || !['function', 'custom'].includes(t.type)) {
      throw bad(`Invalid value: '${isObject(t) ? t.type : typeof t}'. Supported values are: 'function' and 'custom'.`, `${where}.type`);
    }
    const def = t[t.type];
    if (!isObject(def)) throw bad(`Missing required parameter: '${where}.${t.type}'.`, `${where}.${t.type}`);
    if (typeof def.name !== 'string' || !TOOL_NAME.test(def.name)) {
      throw bad(`Invalid '${where}.${t.type}.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`, `${where}.${t.type}.name`);
    }
    if (t.type === 'function' && def.parameters !== undefined && !isObject(def.parameters)) {
      throw bad(`Invalid type for '${where}.function.parameters': expected an object.`, `${where}.function.parameters`);
    }
    names.set(def.name, t.type);
  });
  return names;
}

// chosenTool checks tool_choice and returns the name it requires, '*' for
// any, 'none', or '' for the model's choice.
function chosenTool(body, tools) {
  const tc = body.tool_choice;
  if (tc === undefined || tc === null) return '';
  if (tools.size === 0) throw bad("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", 'tool_choice');
  if (tc === 'none') return 'none';
  if (tc === 'auto') return '';
  if (tc === 'required') return '*';
  if (isObject(tc) && ['function', 'custom'].includes(tc.type) && isObject(tc[tc.type]) && typeof tc[tc.type].name === 'string') {
    const name = tc[tc.type].name;
    if (tools.get(name) !== tc.type) throw bad(`Invalid value for 'tool_choice': tool '${name}' is not in 'tools'.`, 'tool_choice');
    return name;
  }
  throw bad(`Invalid value for 'tool_choice': ${JSON.stringify(tc)}.`, 'tool_choice');
}

// checkMessages checks the conversation: roles, content, and that tool
// calls and tool results pair up.
function checkMessages(messages, issued) {
  if (!Array.isArray(messages) || messages.length === 0) {
    throw bad("Invalid 'messages': expected a non-empty array.", 'messages');
  }
  let open = null; // the ids of the last assistant message's calls not answered yet
  messages.forEach((m, i) => {
    const where = `messages[${i}]`;
    if (!isObject(m) || !ROLES.includes(m.role)) {
      throw bad(`Invalid value: '${isObject(m) ? m.role : typeof m}'. Supported values are: ${ROLES.map((r) => `'${r}'`).join(', ')}.`, `${where}.role`);
    }
    if (m.role !== 'tool' && open !== null && open.size > 0) {
      throw bad(`An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`, `${where}.role`);
    }
    switch (m.role) {
      case 'system':
      case 'developer':
        textContent(m.content, where, ['text']);
        open = null;
        break;
      case 'user':
        textContent(m.content, where, ['text', 'image_url', 'input_audio', 'file']);
        open = null;
        break;
      case 'assistant': {
        const calls = m.tool_calls === undefined || m.tool_calls === null ? [] : m.tool_calls;
        if (!Array.isArray(calls)) throw bad(`Invalid type for '${where}.tool_calls': expected an array.`, `${where}.tool_calls`);
        if (m.content === undefined || m.content === null) {
          if (calls.length === 0) throw bad(`Invalid value for '${where}.content': expected a string, got null.`, `${where}.content`);
        } else {
          textContent(m.content, where, ['text', 'refusal']);
        }
        open = new Set();
        calls.forEach((c, j) => {
          const cw = `${where}.tool_calls[${j}]`;
          if (!isObject(c) || typeof c.id !== 'string' || !['function', 'custom'].includes(c.type) || !isObject(c[c.type])) {
            throw bad(`Invalid '${cw}': expected an id, a type 'function' or 'custom', and its call.`, cw);
          }
          if (!issued.has(c.id)) throw bad(`Invalid '${cw}.id': '${c.id}' is not a tool call this model made.`, `${cw}.id`);
          if (c.type === 'function' && typeof c.function.arguments !== 'string') {
            throw bad(`Invalid type for '${cw}.function.arguments': expected a string.`, `${cw}.function.arguments`);
          }
          open.add(c.id);
        });
        break;
      }
      case 'tool':
        if (typeof m.tool_call_id !== 'string') throw bad(`Missing required parameter: '${where}.tool_call_id'.`, `${where}.tool_call_id`);
        if (open === null || !open.has(m.tool_call_id)) {
          throw bad("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", `${where}.role`);
        }
        open.delete(m.tool_call_id);
        textContent(m.content, where, ['text']);
        break;
    }
  });
  if (open !== null && open.size > 0) {
    throw bad(`An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(', ')}`, 'messages');
  }
}

// check refuses the request as the real API would, or returns the tools
// offered and the tool choice.
function check(body, issued) {
  if (!isObject(body)) throw bad('We could not parse the JSON body of your request.');
  for (const k of Object.keys(body)) {
    if (!PARAMS.has(k)) throw bad(`Unrecognized request argument supplied: ${k}`, k);
  }
  if (typeof body.model !== 'string' || body.model === '') throw bad('you must provide a model parameter', 'model');
  if (!MODELS.includes(body.model)) {
    throw new Refusal(404, `The model \`${body.model}\` does not exist or you do not have access to it.`, 'model', 'model_not_found');
  }
  checkMessages(body.messages, issued);
  const tools = offeredTools(body);
  const choice = chosenTool(body, tools);
  if (body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null) {
    if (tools.size === 0) throw bad("Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.", 'parallel_tool_calls');
    if (typeof body.parallel_tool_calls !== 'boolean') throw bad("Invalid type for 'parallel_tool_calls': expected a boolean.", 'parallel_tool_calls');
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw bad("Invalid type for 'stream': expected a boolean.", 'stream');
  }
  if (body.stream_options !== undefined && body.stream_options !== null && body.stream !== true) {
    throw bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
  }
  number(body, 'temperature', 0, 2);
  number(body, 'top_p', 0, 1);
  number(body, 'presence_penalty', -2, 2);
  number(body, 'frequency_penalty', -2, 2);
  positiveInteger(body, 'max_tokens');
  positiveInteger(body, 'max_completion_tokens');
  if (body.max_tokens != null && body.max_completion_tokens != null) {
    throw bad("Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.", 'max_tokens', 'invalid_parameter_combination');
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1) throw bad("Invalid 'n': this model answers one choice.", 'n');
  if (body.seed !== undefined && body.seed !== null && !Number.isInteger(body.seed)) throw bad("Invalid type for 'seed': expected an integer.", 'seed');
  if (body.stop !== undefined && body.stop !== null) {
    const stops = typeof body.stop === 'string' ? [body.stop] : body.stop;
    if (!Array.isArray(stops) || stops.length > 4 || !stops.every((s) => typeof s === 'string')) {
      throw bad("Invalid 'stop': expected a string or an array of at most 4 strings.", 'stop');
    }
  }
  if (body.response_format !== undefined && body.response_format !== null) {
    const rf = body.response_format;
    if (!isObject(rf) || !['text', 'json_object', 'json_schema'].includes(rf.type)) {
      throw bad("Invalid value for 'response_format.type': supported values are 'text', 'json_object' and 'json_schema'.", 'response_format.type');
    }
    if (rf.type === 'json_schema' && (!isObject(rf.json_schema) || typeof rf.json_schema.name !== 'string')) {
      throw bad("Missing required parameter: 'response_format.json_schema.name'.", 'response_format.json_schema.name');
    }
  }
  return { tools, choice };
}

function contentText(content) {
  if (typeof content === 'string') return content;
  return content.map((p) => p.text || '').join('');
}

// answer is the model's message: a tool call or text.
function answer(body, tools, choice, issued) {
  const last = body.messages[body.messages.length - 1];
  const mustCall = choice !== '' && choice !== 'none';
  if (tools.size > 0 && choice !== 'none' && (last.role !== 'tool' || mustCall)) {
    const known = [...tools.keys()].filter((n) => KNOWN_TOOLS[n]);
    const name = choice !== '' && choice !== '*' ? choice : known.find((n) => n.startsWith('mcp__')) || known[0];
    if (name && KNOWN_TOOLS[name]) {
      const id = 'call_' + crypto.randomBytes(12).toString('hex');
      issued.add(id);
      const args = JSON.stringify(KNOWN_TOOLS[name]());
      const call = tools.get(name) === 'custom'
        ? { id, type: 'custom', custom: { name, input: args } }
        : { id, type: 'function', function: { name, arguments: args } };
      return { call };
    }
    if (last.role !== 'tool') {
      return { text: `the tools offered (${[...tools.keys()].join(', ')}) are none that this model calls` };
    }
  }
  if (last.role === 'tool') {
    return { text: 'the tool said: ' + contentText(last.content).trim().split('\n').pop() };
  }
  return { text: 'no tools were offered to this model' };
}

function usage(body, reply) {
  const prompt = JSON.stringify(body.messages).length >> 2;
  const completion = (reply.text || JSON.stringify(reply.call)).length >> 2;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function whole(res, body, reply, id) {
  const message = { role: 'assistant', content: reply.text === undefined ? null : reply.text, refusal: null };
  if (reply.call) message.tool_calls = [reply.call];
  send(res, 200, {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: reply.call ? 'tool_calls' : 'stop' }],
    usage: usage(body, reply),
  });
}

// streamed sends the reply as chat.completion.chunk events, the text and a
// call's arguments in two pieces each, as a real model's come in several.
function streamed(res, body, reply, id) {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  const created = Math.floor(Date.now() / 1000);
  const withUsage = isObject(body.stream_options) && body.stream_options.include_usage === true;
  const chunk = (delta, finish) => {
    const c = { id, object: 'chat.completion.chunk', created, model: body.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] };
    if (withUsage) c.usage = null;
    res.write(`data: ${JSON.stringify(c)}\n\n`);
  };
  const halves = (s) => [s.slice(0, s.length >> 1), s.slice(s.length >> 1)];
  chunk({ role: 'assistant', content: reply.call ? null : '', refusal: null }, null);
  if (reply.call) {
    const c = reply.call;
    if (c.type === 'custom') {
      chunk({ tool_calls: [{ index: 0, id: c.id, type: 'custom', custom: { name: c.custom.name, input: c.custom.input } }] }, null);
    } else {
      chunk({ tool_calls: [{ index: 0, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] }, null);
      for (const part of halves(c.function.arguments)) chunk({ tool_calls: [{ index: 0, function: { arguments: part } }] }, null);
    }
    chunk({}, 'tool_calls');
  } else {
    for (const part of halves(reply.text)) chunk({ content: part }, null);
    chunk({}, 'stop');
  }
  if (withUsage) {
    res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model: body.model, choices: [], usage: usage(body, reply) })}\n\n`);
  }
  res.end('data: [DONE]\n\n');
}

function send(res, status, value) {
  const data = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) });
  res.end(data);
}

function main() {
  const logPath = process.argv[2];
  if (!logPath || process.argv.length !== 3) {
    console.error('usage: node model.js LOG');
    process.exit(2);
  }
  const issued = new Set();
  let served = 0;
  const record = (entry) => fs.appendFileSync(logPath, JSON.stringify(entry) + '\n');
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const n = ++served;
      const path = req.url;
      const raw = Buffer.concat(chunks).toString('utf8');
      if (req.method === 'GET' && path === '/v1/models') {
        record({ n, path, status: 200 });
        send(res, 200, { object: 'list', data: MODELS.map((id) => ({ id, object: 'model', created: 0, owned_by: 'hermes' })) });
        return;
      }
      let body = raw;
      try {
        if (req.method !== 'POST' || path !== '/v1/chat/completions') {
          throw new Refusal(404, `Invalid URL (${req.method} ${path})`);
        }
        if (!/^Bearer \S+$/.test(req.headers.authorization || '')) {
          throw new Refusal(401, "You didn't provide an API key.", null, 'invalid_api_key');
        }
        try {
          body = JSON.parse(raw);
        } catch (err) {
          throw bad('We could not parse the JSON body of your request.');
        }
        const { tools, choice } = check(body, issued);
        const reply = answer(body, tools, choice, issued);
        const id = 'chatcmpl-' + n;
        record({ n, path, status: 200, body, reply });
        if (body.stream === true) streamed(res, body, reply, id);
        else whole(res, body, reply, id);
      } catch (err) {
        if (!(err instanceof Refusal)) throw err;
        record({ n, path, status: err.status, body, error: err.message });
        send(res, err.status, { error: { message: err.message, type: err.type, param: err.param, code: err.code } });
      }
    });
  });
  server.listen(0, '127.0.0.1', () => {
    console.log(`http://127.0.0.1:${server.address().port}/v1`);
  });
}

main();

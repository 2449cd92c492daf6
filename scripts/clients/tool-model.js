// tool-model.js: a model for the exec provider (see cmd/provider's doc.go)
// that calls one of Codex's tools, so that a Codex turn has a tool call
// in it; the echo provider only ever answers with text.
//
// The transcript arrives as JSONL on stdin, the offered tools in the file
// $HERMES_TOOLS names. Like a real model, it calls only a tool it was
// offered. When the last message is a tool result, the turn is over: the
// reply quotes it. Otherwise, when exec_command (the shell tool that Codex
// 0.169 offers) is offered, the reply asks Codex to run
// `echo tool-ran-$((6*7))` with it, not as a login shell (whose profile may
// print): the 42 in the result is the shell's. When it is not offered, the
// reply says so, and Codex's answer lacks the result.
//
// When $HERMES_CLIENTS_MODEL_LOG is set, each request is appended to that
// file as scripts/clients/model.js logs it (path "exec"), for
// scripts/clients/model-log.js.
'use strict';

const fs = require('fs');

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  const messages = input.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
  const last = messages[messages.length - 1] || {};
  const tools = process.env.HERMES_TOOLS ? JSON.parse(fs.readFileSync(process.env.HERMES_TOOLS, 'utf8')) : [];
  const offered = tools.some((t) => t && t[t.type] && t[t.type].name === 'exec_command');
  let reply;
  if (last.role === 'tool') {
    const text = typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
    reply = { role: 'assistant', content: 'the tool said: ' + text.trim().split('\n').pop() };
  } else if (!offered) {
    reply = { role: 'assistant', content: 'exec_command was not offered to this model' };
  } else {
    reply = {
      role: 'assistant',
      content: null,
      tool_calls: [{
        id: 'call_' + messages.length,
        type: 'function',
        function: { name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo tool-ran-$((6*7))', login: false }) },
      }],
    };
  }
  if (process.env.HERMES_CLIENTS_MODEL_LOG) {
    const entry = { n: 0, path: 'exec', status: 200, body: { messages, tools }, reply };
    fs.appendFileSync(process.env.HERMES_CLIENTS_MODEL_LOG, JSON.stringify(entry) + '\n');
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
});

// tool-model.js: a model for the exec provider (see cmd/provider's doc.go)
// that calls one of Codex's tools, so that a Codex turn has a tool call
// in it; the echo provider only ever answers with text.
//
// The transcript arrives as JSONL on stdin. When the last message is a
// tool result, the turn is over: the reply quotes it. Otherwise the reply
// asks Codex to run `echo tool-ran` through exec_command, the shell tool
// that Codex 0.169 offers, not as a login shell (whose profile may print).
'use strict';

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  const messages = input.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
  const last = messages[messages.length - 1] || {};
  let reply;
  if (last.role === 'tool') {
    const text = typeof last.content === 'string' ? last.content : JSON.stringify(last.content);
    reply = { role: 'assistant', content: 'the tool said: ' + text.trim().split('\n').pop() };
  } else {
    reply = {
      role: 'assistant',
      content: null,
      tool_calls: [{
        id: 'call_' + messages.length,
        type: 'function',
        function: { name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo tool-ran', login: false }) },
      }],
    };
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
});

// sdk-loops.js: the stateless loops that scripts written with the openai
// SDK run against an OpenAI-compatible server. Each turn re-sends the
// whole conversation and names none: no X-Hermes-Session-Id, no
// conversation, no previous_response_id.
//
//   node sdk-loops.js chat|responses BASE_URL TURNS
//
// chat: chat.completions.create with every message so far, the replies
// appended as the SDK returned them. responses: responses.create with
// store:false and the whole input, each turn's output items appended to it,
// as Codex does. It prints each reply's text, and exits 1 on an error.
'use strict';

const OpenAI = require('openai');

async function main() {
  const [kind, baseURL, turnsArg] = process.argv.slice(2);
  const turns = Number(turnsArg);
  if (!['chat', 'responses'].includes(kind) || !baseURL || !(turns > 0)) {
    console.error('usage: node sdk-loops.js chat|responses BASE_URL TURNS');
    process.exit(2);
  }
  // maxRetries 0: a retry would be a request of its own, and the script
  // counts what each scenario's requests create.
  const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
  const history = [];
  for (let i = 1; i <= turns; i++) {
    history.push({ role: 'user', content: `${kind} turn ${i}` });
    let text;
    if (kind === 'chat') {
      const completion = await client.chat.completions.create({ model: 'echo', messages: history });
      const message = completion.choices[0].message;
      history.push({ role: 'assistant', content: message.content });
      text = message.content;
    } else {
      const response = await client.responses.create({ model: 'echo', input: history, store: false });
      history.push(...response.output);
      text = response.output_text;
    }
    console.log(`${kind} turn ${i}: ${text}`);
  }
}

main().catch((err) => {
  console.error(`sdk-loops: ${err.message}`);
  process.exit(1);
});

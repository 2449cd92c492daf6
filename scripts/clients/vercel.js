// vercel.js: two turns of one conversation through the Vercel AI SDK (`ai`
// with `@ai-sdk/openai`) on its default model, the Responses one, with a
// function tool.
//
//   node vercel.js BASE_URL
//
// Each turn is generateText with the tool lookup_order and up to three
// steps: the model calls the tool, the SDK runs it and sends the result,
// the model answers text quoting it. The second turn sends the first
// turn's messages back with a new question; as the SDK stores responses by
// default, it sends the earlier output items as item_reference items. It
// prints each turn's answer, and exits 1 when a turn's answer does not
// hold the tool's result.
'use strict';

const { generateText, jsonSchema, stepCountIs, tool } = require('ai');
const { createOpenAI } = require('@ai-sdk/openai');

async function main() {
  const [baseURL] = process.argv.slice(2);
  if (!baseURL || process.argv.length !== 3) {
    console.error('usage: node vercel.js BASE_URL');
    process.exit(2);
  }
  const openai = createOpenAI({ baseURL, apiKey: 'unused' });
  const calls = [];
  const tools = {
    lookup_order: tool({
      description: 'Finds an order by its number.',
      inputSchema: jsonSchema({
        type: 'object',
        properties: { order_id: { type: 'string', description: 'the order number, e.g. A-17' } },
        required: ['order_id'],
        additionalProperties: false,
      }),
      execute: async ({ order_id: id }) => {
        calls.push(id);
        return `order ${id}: shipped (lookup ${calls.length})`;
      },
    }),
  };
  const messages = [];
  for (const [turn, question] of [[1, 'Where is my order A-17?'], [2, 'Look it up again, please.']]) {
    messages.push({ role: 'user', content: question });
    // maxRetries 0: a retry would be a request of its own, and clients.sh
    // counts what each scenario's requests create.
    const result = await generateText({
      model: openai('hermes-test-model'),
      messages,
      tools,
      stopWhen: stepCountIs(3),
      // Values clients.sh looks for in the model's log.
      temperature: 0.25,
      maxOutputTokens: 300,
      maxRetries: 0,
    });
    messages.push(...result.response.messages);
    console.log(`turn ${turn}: ${result.steps.length} steps, answer: ${result.text}`);
    const expected = `(lookup ${turn})`;
    if (calls.length !== turn || !result.text.includes(expected)) {
      throw new Error(`turn ${turn}: the model did not call lookup_order and answer with its result ${expected}`);
    }
  }
}

main().catch((err) => {
  console.error(`vercel: ${err.message}`);
  process.exit(1);
});

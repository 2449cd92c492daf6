// model-log.js: did a client's tool, and its parameters, reach the model?
// Reads the log of scripts/clients/model.js.
//
//   node model-log.js LOG SKIP TOOL [NAME=JSON ...]
//
// It looks at the requests logged after the first SKIP lines: TOOL reached
// the model when one of them offered it (a function or custom tool of that
// name). Each NAME=JSON must be a parameter of a request that offered it,
// with that value; NAME may be a|b when either name will do (max_tokens or
// max_completion_tokens). It prints "yes", or "no" and why, for clients.sh's
// table, the requests the model refused on stderr, and exits 1 on "no".
'use strict';

const fs = require('fs');
const { isDeepStrictEqual } = require('util');

function main() {
  const [logPath, skipArg, toolName, ...wants] = process.argv.slice(2);
  const skip = Number(skipArg);
  if (!logPath || !(skip >= 0) || !toolName) {
    console.error('usage: node model-log.js LOG SKIP TOOL [NAME=JSON ...]');
    process.exit(2);
  }
  const lines = fs.existsSync(logPath) ? fs.readFileSync(logPath, 'utf8').split('\n').filter((l) => l !== '') : [];
  const entries = lines.slice(skip).map((l) => JSON.parse(l));
  for (const e of entries) {
    if (e.status !== 200) console.error(`model: request ${e.n} refused with ${e.status}: ${e.error}`);
  }
  const requests = entries.filter((e) => e.body && typeof e.body === 'object');
  if (requests.length === 0) return no('no request reached the model');
  const offering = requests.filter((e) => (e.body.tools || []).some((t) => t && t[t.type] && t[t.type].name === toolName));
  if (offering.length === 0) {
    const seen = [...new Set(requests.flatMap((e) => (e.body.tools || []).map((t) => (t && t[t.type] && t[t.type].name) || '?')))];
    return no(seen.length === 0 ? 'no tools offered' : `offered ${seen.join(', ')}`);
  }
  const missing = wants.filter((want) => {
    const eq = want.indexOf('=');
    const names = want.slice(0, eq).split('|');
    const value = JSON.parse(want.slice(eq + 1));
    return !offering.some((e) => names.some((name) => isDeepStrictEqual(e.body[name], value)));
  });
  if (missing.length > 0) return no(`not received: ${missing.join(' ')}`);
  console.log('yes');
}

function no(why) {
  console.log(`no (${why})`);
  process.exit(1);
}

main();

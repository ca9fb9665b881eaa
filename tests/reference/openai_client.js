// Runs requests through OpenAI's own Node client (the `openai` npm package,
// pinned in scripts/fetch_data.sh) against a `gpt2lab serve`, for
// e2e/test_serve.py and bench/serve_load.py.
//   node openai_client.js OPENAI_DIR BASE_URL API_KEY REQUESTS.json
// REQUESTS.json: [{"kind": "create" | "stream" | "models" | "retrieve", "params": {...}}]
// ("retrieve": models.retrieve(params.id))
// Prints one JSON array: per request the response (create), the chunks'
// choices joined per index with the last chunk's finish_reason and usage
// (stream), the model list (models), or {"error": {status, ...}}.
"use strict";
const fs = require("fs");

async function streamed(client, params) {
  const stream = await client.completions.create({ ...params, stream: true });
  const choices = {};
  let usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const got = choices[c.index] || (choices[c.index] = { index: c.index, text: "", finish_reason: null, tokens: [] });
      got.text += c.text;
      if (c.logprobs) got.tokens.push(...c.logprobs.tokens);
      if (c.finish_reason) got.finish_reason = c.finish_reason;
    }
  }
  return { choices: Object.values(choices), usage, chunks };
}

async function one(client, r) {
  try {
    if (r.kind === "create") return await client.completions.create(r.params);
    if (r.kind === "stream") return await streamed(client, r.params);
    if (r.kind === "models") return await client.models.list();
    if (r.kind === "retrieve") return await client.models.retrieve(r.params.id);
    throw new Error("unknown kind " + r.kind);
  } catch (e) {
    if (e.status === undefined) throw e;
    return { error: { status: e.status, message: e.message, type: e.type, code: e.code, param: e.param } };
  }
}

async function main() {
  const [dir, baseURL, apiKey, requests] = process.argv.slice(2);
  const { OpenAI } = require(dir);
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });
  const out = [];
  for (const r of JSON.parse(fs.readFileSync(requests, "utf8"))) {
    const got = await one(client, r);
    out.push(r.kind === "models" && !got.error ? got.data : got);
  }
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

// Runs chat and embedding requests through OpenAI's own Node client (the
// `openai` npm package, pinned in scripts/fetch_data.sh) against a
// `gpt2lab serve`, for e2e/test_serve_chat.py.
//   node openai_chat_client.js OPENAI_DIR BASE_URL API_KEY REQUESTS.json
// REQUESTS.json: [{"kind": "chat" | "chat_stream" | "completion" | "embed", "params": {...}}]
// Prints one JSON array: per request the response (chat, completion,
// embed: embeddings.create, whose client asks for base64 and decodes it
// unless params.encoding_format is set), or for chat_stream the chunks'
// deltas joined per choice index with the first delta's role, the last
// finish_reason, the logprobs entries, the usage chunk and the chunk count;
// or {"error": {status, message, type, code, param}}.
"use strict";
const fs = require("fs");

async function chatStreamed(client, params) {
  const stream = await client.chat.completions.create({ ...params, stream: true });
  const choices = {};
  let usage = null, chunks = 0;
  const objects = new Set();
  for await (const chunk of stream) {
    chunks++;
    objects.add(chunk.object);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      const got = choices[c.index] ||
        (choices[c.index] = { index: c.index, role: null, content: "", finish_reason: null, logprobs: [] });
      if (c.delta.role && got.role === null) got.role = c.delta.role;
      if (c.delta.content) got.content += c.delta.content;
      if (c.logprobs && c.logprobs.content) got.logprobs.push(...c.logprobs.content);
      if (c.finish_reason) got.finish_reason = c.finish_reason;
    }
  }
  return { choices: Object.values(choices), usage, chunks, objects: [...objects] };
}

async function one(client, r) {
  try {
    if (r.kind === "chat") return await client.chat.completions.create(r.params);
    if (r.kind === "chat_stream") return await chatStreamed(client, r.params);
    if (r.kind === "completion") return await client.completions.create(r.params);
    if (r.kind === "embed") {
      const got = await client.embeddings.create(r.params);
      // A decoded base64 embedding is a Float32Array: as a list for JSON.
      for (const d of got.data) if (typeof d.embedding !== "string") d.embedding = Array.from(d.embedding);
      return got;
    }
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
  for (const r of JSON.parse(fs.readFileSync(requests, "utf8"))) out.push(await one(client, r));
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

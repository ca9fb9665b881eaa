// CLIENTS concurrent clients of an OpenAI-style server, each sending
// REQUESTS completions one after another through OpenAI's own Node client
// (the `openai` npm package), for bench/serve_batch.sh:
//   node serve_batch_client.js OPENAI_DIR BASE_URL CLIENTS REQUESTS MAX_TOKENS
// Prints one JSON line: clients, requests, completion tokens, seconds,
// tokens/s and the p50/p99 of the whole-request latency in seconds.
"use strict";

async function client(openai, id, requests, maxTokens, latencies) {
  let tokens = 0;
  for (let i = 0; i < requests; i++) {
    const start = process.hrtime.bigint();
    const r = await openai.completions.create({
      model: "m",
      prompt: "The state of the union is",
      max_tokens: maxTokens,
      temperature: 0.8,
      seed: id * 1000 + i,
    });
    latencies.push(Number(process.hrtime.bigint() - start) / 1e9);
    tokens += r.usage.completion_tokens;
  }
  return tokens;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const [dir, baseURL, clients, requests, maxTokens] = process.argv.slice(2);
  const { OpenAI } = require(dir);
  const openai = new OpenAI({ baseURL, apiKey: "none", maxRetries: 0, timeout: 600000 });
  const latencies = [];
  const start = process.hrtime.bigint();
  const counts = await Promise.all(
    Array.from({ length: +clients }, (_, id) => client(openai, id, +requests, +maxTokens, latencies)),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const tokens = counts.reduce((a, b) => a + b, 0);
  latencies.sort((a, b) => a - b);
  const out = {
    clients: +clients,
    requests: latencies.length,
    tokens,
    seconds: +seconds.toFixed(3),
    tokens_per_s: +(tokens / seconds).toFixed(1),
    p50_s: +percentile(latencies, 50).toFixed(3),
    p99_s: +percentile(latencies, 99).toFixed(3),
  };
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

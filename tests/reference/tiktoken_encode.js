// Reference encoder for tests/reference/test_tokenizer_tiktoken.py and
// bench/tokenizer_bench: tiktoken (the npm package, OpenAI's Rust tokenizer
// compiled to WASM) run on files, printing one line of ids per file.
//   node tiktoken_encode.js TIKTOKEN_DIR gpt2 ordinary|special FILE...
//   node tiktoken_encode.js TIKTOKEN_DIR custom RANKS_FILE FILE...
//       RANKS_FILE: base64 tokens in rank order, one per line; GPT-2's pattern
//   node tiktoken_encode.js TIKTOKEN_DIR time FILE REPEATS
//       prints the best encode wall time, the token count and the best CPU
//       time, in seconds (for the benchmark)
// Files are read as UTF-8: the caller must pass valid UTF-8, since a JS
// string cannot hold invalid bytes (they would become U+FFFD here).
'use strict';
const fs = require('fs');
const path = require('path');

const [dir, mode, ...args] = process.argv.slice(2);
const tiktoken = require(path.resolve(dir, 'tiktoken.cjs'));
const kPattern =
  "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

function write(ids) {
  // Large outputs: join in slices to keep string sizes reasonable.
  const out = [];
  for (let i = 0; i < ids.length; i += 65536) out.push(Array.from(ids.subarray(i, i + 65536)).join(' '));
  process.stdout.write(out.join(' ') + '\n');
}

if (mode === 'gpt2') {
  const enc = tiktoken.get_encoding('gpt2');
  const [kind, ...files] = args;
  for (const f of files) {
    const text = fs.readFileSync(f, 'utf8');
    write(kind === 'special' ? enc.encode(text, 'all') : enc.encode_ordinary(text));
  }
  enc.free();
} else if (mode === 'custom') {
  const [ranksFile, ...files] = args;
  const ranks = fs.readFileSync(ranksFile, 'utf8').trim().split('\n');
  const enc = new tiktoken.Tiktoken('! 0 ' + ranks.join(' '), {}, kPattern);
  for (const f of files) write(enc.encode_ordinary(fs.readFileSync(f, 'utf8')));
  enc.free();
} else if (mode === 'time') {
  const [file, repeats] = args;
  const enc = tiktoken.get_encoding('gpt2');
  const text = fs.readFileSync(file, 'utf8');
  let best = Infinity, bestCpu = Infinity, n = 0;
  for (let r = 0; r < Number(repeats); r++) {
    const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
    n = enc.encode_ordinary(text).length;
    const c = process.cpuUsage(c0);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
    bestCpu = Math.min(bestCpu, (c.user + c.system) / 1e6);
  }
  process.stdout.write(`${best} ${n} ${bestCpu}\n`);
  enc.free();
} else {
  process.stderr.write('usage: see the header of tiktoken_encode.js\n');
  process.exit(2);
}

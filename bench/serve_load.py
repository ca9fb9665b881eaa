#!/usr/bin/python3
"""A bounded load test of `gpt2lab serve` on loopback (run by hand; no test
asserts a time): CLIENTS concurrent clients each send REQUESTS completions
one after another, half of them streamed, and the script prints latency
percentiles (whole request, and time to the first streamed byte), completion
tokens/s, the 429s, the CPU model and the load average before and after.

    bench/serve_load.py [--model DIR] [--clients 8] [--requests 20] [--max-tokens 32] [--threads 0]

Without --model it makes a small random model (4 layers, C 256, context 256,
GPT-2's tokenizer) in a scratch folder. The server runs with --quiet and
--max-requests >= CLIENTS, so every request is queued, none refused.
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import harness  # noqa: E402
import serve_util  # noqa: E402


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def one_request(port, i, max_tokens, stream):
    """(seconds, seconds to the first byte, completion tokens, status)."""
    body = json.dumps({"prompt": "The state of the union is", "max_tokens": max_tokens, "seed": i,
                       "temperature": 0.8, "stream": stream, "stream_options": {"include_usage": True}})
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    first = r.read(1)
    t_first = time.perf_counter() - t0
    raw = (first + r.read()).decode()
    elapsed = time.perf_counter() - t0
    conn.close()
    if r.status != 200:
        return elapsed, t_first, 0, r.status
    if stream:
        events = [json.loads(x[6:]) for x in raw.split("\n\n") if x.startswith("data: {")]
        tokens = next(e["usage"]["completion_tokens"] for e in events if e.get("usage"))
    else:
        tokens = json.loads(raw)["usage"]["completion_tokens"]
    return elapsed, t_first, tokens, r.status


def sample_rate(model, threads, max_tokens):
    """Generation tokens/s of `gpt2lab sample` on the same model and length,
    in the same run: what the server's decoding is compared with."""
    r = harness.run("sample", "--model", model, "--prompt", "The state of the union is", "--seed", "1",
                    "--max-new-tokens", str(max_tokens), "--threads", str(threads), check=True)
    for line in r.stderr.splitlines():
        if line.startswith("sample: generation"):  # "... (  123.4 tok/s, 8.10 ms/token)"
            return float(line.split("(", 1)[1].split("tok/s")[0])
    return float("nan")


def percentiles(xs):
    xs = sorted(xs)
    pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    return f"p50 {pick(0.5) * 1e3:8.1f} ms  p90 {pick(0.9) * 1e3:8.1f} ms  p99 {pick(0.99) * 1e3:8.1f} ms" \
           f"  max {xs[-1] * 1e3:8.1f} ms"


def run(port, clients, requests, max_tokens):
    results, lock = [], threading.Lock()

    def client(c):
        for k in range(requests):
            got = one_request(port, c * requests + k, max_tokens, stream=k % 2 == 1)
            with lock:
                results.append((k % 2 == 1, *got))

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpt2lab_serve_load_") as tmp:
        model = a.model
        if not model:
            model = os.path.join(tmp, "model")
            harness.run("init", "--out", model, "--n-layer", "4", "--n-head", "4", "--n-embd", "256", "--block-size",
                        "256", "--vocab-size", "50257", "--seed", "1", check=True)
        load_before = os.getloadavg()
        with serve_util.Server(model, "--quiet", "--threads", str(a.threads), "--max-requests",
                               str(max(8, a.clients))) as srv:
            one_request(srv.port, 0, 4, False)  # warm-up
            before = srv.metrics()
            banner = srv.banner
            results, wall = run(srv.port, a.clients, a.requests, a.max_tokens)
            server = {k: v - before[k] for k, v in srv.metrics().items()}
        direct = sample_rate(model, a.threads, a.max_tokens)
        load_after = os.getloadavg()
    ok = [r for r in results if r[4] == 200]
    tokens = sum(r[3] for r in ok)
    print(f"server: {banner.strip()}")
    print(f"cpu: {cpu_model()}, {os.cpu_count()} cores; load average before {load_before[0]:.2f}, "
          f"after {load_after[0]:.2f} (1 min)")
    print(f"{a.clients} clients x {a.requests} requests, max_tokens {a.max_tokens}, server --threads {a.threads}: "
          f"{len(ok)} ok, {len(results) - len(ok)} refused, {wall:.2f} s")
    print(f"latency (all):        {percentiles([r[1] for r in ok])}")
    print(f"first byte (streamed): {percentiles([r[2] for r in ok if r[0]])}")
    print(f"throughput: {tokens / wall:.1f} completion tokens/s, {len(ok) / wall:.2f} requests/s, "
          f"mean {statistics.mean(r[3] for r in ok):.1f} tokens per request")
    busy = server["tokens_predicted_seconds_total"]
    print(f"server: {server['tokens_predicted_total']:.0f} tokens in {busy:.2f} s of generation "
          f"({server['tokens_predicted_total'] / busy:.1f} tokens/s, prompts included), worker busy "
          f"{busy / wall * 100:.0f} % of the wall time; gpt2lab sample on the same model: {direct:.1f} tokens/s")


if __name__ == "__main__":
    main()

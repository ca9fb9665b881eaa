"""The training step against its bound with every activation in cache.

Runs, for ROUNDS rounds at each shape, one after another: the old build's
fp32 step (when given), this build's fp32 and --bf16 steps, and the patched
build's (bench/warm_bound.patch: every layer's activations in the first
layer's buffers), on one thread; prints the medians and their ratios to the
old fp32 step. Then, from one --profile run of the patched --bf16 step, the
share of its products (the rows of "gemm" and the LM head), and the bound
that would leave: the all-in-cache step's other ops plus the products'
FLOPs at twice the one-thread FMA peak (AVX512-BF16's dot products).

    python3 bench/warm_bound.py OLD_BENCH|- NEW_BENCH WARM_BENCH [ROUNDS] [STEPS]
"""
import re
import statistics
import subprocess
import sys

# (name, layers, heads, width, B): v3's shapes with the most hours; T 64, V 4,096.
SHAPES = [("init", 24, 2, 64, 8), ("atlas L12", 12, 2, 64, 8), ("lr-edge, norm", 4, 4, 128, 8),
          ("translation", 4, 4, 128, 16)]
T, V = 64, 4096


def step_ms(bench, shape, steps, extra=()):
    _, layers, heads, width, batch = shape
    cmd = [bench, "--layers", str(layers), "--heads", str(heads), "--embd", str(width), "--vocab", str(V),
           "-B", str(batch), "-T", str(T), "--threads", "1", "--steps", str(steps), *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return out, float(re.search(r"([0-9.]+) ms/step", out).group(1))


def product_gflop(shape):
    """The step's matrix products: 3 per linear layer (12 C^2 per token each), 3 for the head."""
    _, layers, _, width, batch = shape
    n = batch * T
    return (3 * layers * 2 * n * 12 * width * width + 3 * 2 * n * width * V) / 1e9


def bound(warm_bench, shape, steps, warm_bf16_ms):
    out, _ = step_ms(warm_bench, shape, steps, ("--bf16", "--profile"))
    rows = [(op, ms) for op, ms in re.findall(r"^\| ([^|]+?) \| ([0-9.]+) \|", out, re.M) if op != "total"]
    total = sum(float(ms) for _, ms in rows)
    products = sum(float(ms) for op, ms in rows if "gemm" in op or "lm_head" in op)
    peak = float(re.search(r"FMA peak: 512-bit ([0-9.]+)", out).group(1))
    rest = warm_bf16_ms * (1 - products / total)
    return rest + product_gflop(shape) / (2 * peak) * 1e3, products / total, peak


def main():
    old, new, warm = sys.argv[1], sys.argv[2], sys.argv[3]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    steps = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    runs = [("old fp32", old, ())] if old != "-" else []
    runs += [("new fp32", new, ()), ("new bf16", new, ("--bf16",)), ("all in cache fp32", warm, ()),
             ("all in cache bf16", warm, ("--bf16",))]
    print(f"# {rounds} rounds of {steps}-step runs alternated; ms/step medians; ratios to the first column")
    print("| shape (L C, B) | " + " | ".join(name for name, _, _ in runs) +
          " | ratios | all in cache bf16 with products at the bf16 peak |")
    print("|---" * (len(runs) + 3) + "|")
    for shape in SHAPES:
        ms = {name: [] for name, _, _ in runs}
        for _ in range(rounds):
            for name, bench, extra in runs:
                ms[name].append(step_ms(bench, shape, steps, extra)[1])
        med = {name: statistics.median(v) for name, v in ms.items()}
        ref = med[runs[0][0]]
        best, share, peak = bound(warm, shape, steps, med["all in cache bf16"])
        cells = " | ".join(f"{med[name]:.1f}" for name, _, _ in runs)
        ratios = ", ".join(f"{ref / med[name]:.2f}" for name, _, _ in runs[1:])
        print(f"| {shape[0]}: {shape[1]} {shape[3]}, {shape[4]} | {cells} | {ratios} | {best:.1f} ms, "
              f"{ref / best:.2f}× (products {share:.0%} of the step, FMA peak {peak:.0f}) |")


if __name__ == "__main__":
    main()

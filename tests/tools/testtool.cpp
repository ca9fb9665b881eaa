// gpt2lab_testtool: exposes library internals to the Python oracles in
// tests/reference without adding debug commands to the user CLI.
//
//   fwdbwd --model DIR --batch FILE --B b --T t --out FILE
//     FILE holds int32 tokens (B*T) then int32 targets (B*T). Writes a
//     safetensors file with "logits" (B,T,V), "loss" (1) and "grad.<name>"
//     for every parameter.
//   budgets
//     Prints every named study budget (tiny, quick, full) as study.json
//     records it, by name: tools/report/budgets.json is this output, and
//     the report holds a bf16 study's budget to its name's.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>

#include "core/file.h"
#include "core/threads.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "io/safetensors.h"
#include "study/budget.h"

using namespace gpt2lab;

int main(int argc, char** argv) {
  CLI::App app{"gpt2lab test helper"};
  app.require_subcommand(1);
  std::string model_dir, batch_file, out;
  int B = 0, T = 0, threads = 0;
  auto* fb = app.add_subcommand("fwdbwd", "forward + backward dump");
  fb->add_option("--model", model_dir)->required();
  fb->add_option("--batch", batch_file)->required();
  fb->add_option("--B", B)->required();
  fb->add_option("--T", T)->required();
  fb->add_option("--out", out)->required();
  fb->add_option("--threads", threads);
  auto* bu = app.add_subcommand("budgets", "the named study budgets as JSON");
  try {
    app.parse(argc, argv);
    if (bu->parsed()) {
      nlohmann::json all;
      for (const char* name : {"tiny", "quick", "full"}) all[name] = to_json(budget_by_name(name));
      std::printf("%s\n", all.dump(1).c_str());
      return 0;
    }
    set_threads(threads);
    GPT2<float> model = load_model(model_dir);
    const std::string raw = read_file(batch_file, SIZE_MAX);
    const size_t N = static_cast<size_t>(B) * T;
    check(raw.size() == 2 * N * sizeof(int), "batch file size does not match B*T");
    std::vector<int> tokens(N), targets(N);
    std::memcpy(tokens.data(), raw.data(), N * sizeof(int));
    std::memcpy(targets.data(), raw.data() + N * sizeof(int), N * sizeof(int));
    model.zero_grad();
    float loss = model.forward(tokens.data(), targets.data(), B, T);
    model.backward();
    const ModelConfig& c = model.config();
    const int V = c.vocab_size, Vp = c.padded_vocab_size();
    std::vector<float> logits(N * V);
    for (size_t r = 0; r < N; ++r) std::memcpy(&logits[r * V], model.logits() + r * Vp, V * sizeof(float));
    std::vector<TensorToWrite> ts;
    ts.push_back({"logits", {B, T, V}, logits.data()});
    ts.push_back({"loss", {1}, &loss});
    std::vector<std::string> names;
    for (const auto& t : model.layout().tensors()) ts.push_back({"grad." + t.name, t.shape, model.grads() + t.offset});
    write_safetensors(out, ts, {});
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const Error& e) {
    std::fprintf(stderr, "testtool: %s\n", e.what());
    return 1;
  }
  return 0;
}

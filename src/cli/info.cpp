// gpt2lab info: print a checkpoint's config and parameter counts per group.
#include <cstdio>
#include <map>

#include "cli/command.h"
#include "gpt2lab/io/checkpoint.h"
#include "io/safetensors.h"

namespace gpt2lab::cli::info_command {
namespace {

std::string with_commas(size_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

void add(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("info", "Show a checkpoint's configuration and parameter counts");
  sub->add_option("dir", *dir, "Checkpoint directory")->required();
  sub->callback([dir] {
    // Validated as every loader does (shapes against config.json), without
    // reading the tensors.
    validate_checkpoint(*dir);
    const ModelConfig c = load_config(*dir);
    SafetensorsFile file = SafetensorsFile::open(model_directory(*dir) / kWeightsFile);
    std::printf("checkpoint   %s\n", dir->c_str());
    std::printf("n_layer      %d\nn_head       %d\nn_embd       %d\nblock_size   %d\n", c.n_layer, c.n_head, c.n_embd,
                c.block_size);
    std::printf("vocab_size   %d (padded to %d)\n", c.vocab_size, c.padded_vocab_size());
    std::printf("norm         %s (final %s %s)\n", to_string(c.norm),
                c.norm_type == NormType::rmsnorm ? "RMSNorm" : "LayerNorm", c.final_norm ? "on" : "off");
    if (c.norm == NormPlacement::deepnorm)
      std::printf("deepnorm     alpha %g (skip), beta %g (branch init)\n", c.skip_factor(), c.deepnorm_beta());
    std::printf("init         %s (residual scale %s)\n", to_string(c.init), c.residual_scale ? "on" : "off");
    std::printf("ln epsilon   %g\n", static_cast<double>(c.layer_norm_epsilon));
    // Shown only when set: a GPT-2 checkpoint's info reads as it always did.
    if (c.embedding_scale != EmbeddingScale::none)
      std::printf("embedding    scale %s: (wte + wpe) x %g%s\n", to_string(c.embedding_scale), c.embedding_factor(),
                  c.embedding_scale == EmbeddingScale::unit ? ", wte and wpe drawn from N(0, 1/n_embd)" : "");
    const ParamLayout layout(c);
    struct Group {
      int count = 0;
      size_t params = 0;
      std::vector<int64_t> shape;
      int order = 0;
    };
    std::map<std::string, Group> groups;
    int order = 0;
    for (const auto& t : layout.tensors()) {
      Group& g = groups[kind_suffix(t.kind)];
      if (g.count == 0) g.order = order++, g.shape = t.shape;
      g.count++;
      g.params += t.numel;
    }
    std::vector<std::pair<std::string, Group>> sorted(groups.begin(), groups.end());
    std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second.order < b.second.order; });
    std::printf("\n%-22s %7s %-16s %14s\n", "tensor group", "tensors", "shape", "parameters");
    for (const auto& [name, g] : sorted) {
      std::string shape = "(";
      for (size_t i = 0; i < g.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(g.shape[i]);
      shape += ")";
      std::printf("%-22s %7d %-16s %14s\n", name.c_str(), g.count, shape.c_str(), with_commas(g.params).c_str());
    }
    std::printf("%-22s %7zu %-16s %14s\n", "total", layout.tensors().size(), "",
                with_commas(layout.num_parameters()).c_str());
    std::printf("\nweights file %s: %zu tensors\n", file.path().c_str(), file.tensors().size());
  });
}

GPT2LAB_COMMAND(11, add);

}  // namespace
}  // namespace gpt2lab::cli::info_command

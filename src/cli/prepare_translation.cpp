// gpt2lab prepare-translation: gettext catalogs -> a masked translation
// dataset (src/translation/dataset.h).
#include <cstdio>

#include "cli/command.h"
#include "core/data_dir.h"
#include "core/threads.h"
#include "translation/dataset.h"

namespace gpt2lab::cli::prepare_translation_command {
namespace {

void print_summary(const fs::path& out, const TranslationSummary& s) {
  std::printf("prepared %s from %lld catalog(s)\n", out.c_str(), static_cast<long long>(s.catalogs));
  std::printf("  pairs: train %lld, valid %lld, test %lld (split by source string)\n",
              static_cast<long long>(s.train_pairs), static_cast<long long>(s.valid_pairs),
              static_cast<long long>(s.test_pairs));
  std::printf("  tokens: train %lld, val %lld (loss on the target side only)\n", static_cast<long long>(s.train_tokens),
              static_cast<long long>(s.val_tokens));
  std::printf("  cleaning:\n");
  for (const auto& [rule, count] : s.cleaning.items())
    std::printf("    %-34s %s\n", rule.c_str(), count.dump().c_str());
}

void add(CLI::App& app) {
  struct Flags {
    std::vector<std::string> catalogs;
    std::string out;
    TranslationPrepareOptions options;
    int threads = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = app.add_subcommand(
      "prepare-translation",
      "Turn gettext catalogs (.mo/.po) into an English->LANG translation dataset: train.bin/.mask, val.bin/.mask, "
      "{train,valid,test}.jsonl, meta.json");
  sub->add_option("--catalogs", f->catalogs,
                  "Folders searched for LANG/LC_MESSAGES/*.mo|*.po, or catalog files (default: " +
                      (data_directory() / "catalogs").string() + ", which scripts/fetch_translation.sh fills)");
  sub->add_option("--target", f->options.target, "Language of the catalogs: fr, de, ...")->capture_default_str();
  sub->add_flag("--reverse", f->options.reverse, "Translate from --target into English instead");
  sub->add_option("--tokenizer", f->options.tokenizer, "\"gpt2\" or a folder with encoder.json + vocab.bpe")
      ->capture_default_str();
  sub->add_option("--out", f->out, "Output folder")->required();
  sub->add_option("--valid-pairs", f->options.valid_pairs, "Pairs held out for validation (distinct sources)")
      ->capture_default_str();
  sub->add_option("--test-pairs", f->options.test_pairs, "Pairs held out for the test (distinct sources)")
      ->capture_default_str();
  sub->add_option("--max-tokens", f->options.max_tokens, "Drop pairs with a side longer than this many tokens")
      ->capture_default_str();
  sub->add_option("--seed", f->options.seed, "Seed of the split and of the train order")
      ->capture_default_str()
      ->transform(uint64_text());
  sub->add_flag("--force", f->options.force, "Replace a dataset already prepared in --out");
  add_threads_flag(sub, f->threads);
  sub->callback([f] {
    set_threads(f->threads);
    TranslationPrepareOptions o = f->options;
    if (f->catalogs.empty())
      o.catalogs = {data_directory() / "catalogs"};
    else
      o.catalogs.assign(f->catalogs.begin(), f->catalogs.end());
    o.out = f->out;
    print_summary(o.out, prepare_translation(o));
  });
}

GPT2LAB_COMMAND(23, add);

}  // namespace
}  // namespace gpt2lab::cli::prepare_translation_command

#include "translation/translate.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <optional>

#include "gpt2lab/core/error.h"
#include "gpt2lab/core/rng.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/sample/beam_search.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/sample/inference.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/stream_decoder.h"

namespace gpt2lab {

namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\n\r");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\n\r");
  return s.substr(a, b - a + 1);
}

int argmax(const float* logits, int V) { return static_cast<int>(std::max_element(logits, logits + V) - logits); }

struct Decoded {
  std::vector<int> ids;
  bool ended = false;  // by <|endoftext|>
};

// One sentence on one session: prefill the prompt, then one token at a time.
Decoded decode_one(InferenceSession& session, const ModelConfig& c, std::vector<int> prompt, int eot, int cap,
                   const SamplingOptions& sampling, uint64_t seed) {
  Decoded d;
  session.reset();
  if (static_cast<int>(prompt.size()) >= c.block_size) return d;  // no room: an empty hypothesis
  const int room = std::min(cap, c.block_size - static_cast<int>(prompt.size()));
  Rng rng(seed);
  const float* logits = session.append(prompt);
  for (int i = 0; i < room; ++i) {
    const int next = sampling.temperature > 0
                         ? sample_token({logits, static_cast<size_t>(c.vocab_size)}, sampling, rng, prompt)
                         : argmax(logits, c.vocab_size);
    if (next == eot) {
      d.ended = true;
      break;
    }
    d.ids.push_back(next);
    if (i + 1 < room) logits = session.append(std::span<const int>(&next, 1));
  }
  return d;
}

Decoded beam_decode(DecodeBatch& batch, const std::vector<int>& prompt, int eot, int cap, int width) {
  if (static_cast<int>(prompt.size()) >= batch.context_size()) return {};
  BeamHypothesis h = beam_search(batch, prompt, eot, cap, width);
  return {std::move(h.tokens), h.ended};
}

}  // namespace

std::vector<std::string> translate(const GPT2<float>& model, const Tokenizer& tok, const TranslationTemplate& fmt,
                                   const std::vector<TranslationPair>& pairs, const TranslateOptions& o,
                                   int64_t* generated_tokens, int64_t* hit_length_cap) {
  check(o.max_new_tokens > 0, "translate: the length cap (max_new_tokens) must be positive");
  check(o.temperature >= 0, "--temperature must be >= 0 (0 = greedy)");
  check(o.beam >= 1 && o.beam <= 64, "--beam must be 1 (greedy) to 64, not " + std::to_string(o.beam));
  check(o.beam == 1 || o.temperature == 0, "--beam above 1 searches; it takes no --temperature");
  const ModelConfig& c = model.config();
  SamplingOptions sampling;
  sampling.temperature = o.temperature;
  validate(sampling);
  std::vector<std::string> out(pairs.size());
  std::vector<int64_t> generated(pairs.size()), capped(pairs.size());
  // One packed copy of the weights, read by every thread's session.
  const InferenceOptions io{o.weights, pack_decode_weights(model, o.weights)};
#pragma omp parallel
  {
    // One cache per thread; sentences spread dynamically (lengths differ).
    InferenceSession session(model, io);
    std::optional<DecodeBatch> batch;
    if (o.beam > 1) batch.emplace(model, io);
#pragma omp for schedule(dynamic, 1)
    for (size_t i = 0; i < pairs.size(); ++i) {
      std::vector<int> prompt = {tok.eot_id()};
      const std::vector<int> body = tok.encode(fmt.prompt(pairs[i].source), /*allow_special=*/false);
      prompt.insert(prompt.end(), body.begin(), body.end());
      const Decoded d = batch ? beam_decode(*batch, prompt, tok.eot_id(), o.max_new_tokens, o.beam)
                              : decode_one(session, c, std::move(prompt), tok.eot_id(), o.max_new_tokens, sampling,
                                           o.seed + static_cast<uint64_t>(i));
      // Byte-level tokens may end inside a character, or make bytes that
      // never form one: those become U+FFFD, so the metrics read UTF-8.
      Utf8StreamDecoder utf8;
      out[i] = trim(utf8.push(tok.decode(d.ids)) + utf8.flush());
      generated[i] = static_cast<int64_t>(d.ids.size());
      capped[i] = d.ended ? 0 : 1;
    }
  }
  if (generated_tokens) *generated_tokens = std::accumulate(generated.begin(), generated.end(), int64_t{0});
  if (hit_length_cap) *hit_length_cap = std::accumulate(capped.begin(), capped.end(), int64_t{0});
  return out;
}

TranslationEval evaluate_translation(const fs::path& model_path, const fs::path& data, const std::string& split,
                                     const TranslateOptions& given) {
  TranslationDataset ds = load_translation_dataset(data, split);
  const GPT2<float> model = load_model(model_directory(model_path));
  const Tokenizer tok = checkpoint_tokenizer(model_path);
  const nlohmann::json& dt = ds.meta.value("tokenizer", nlohmann::json::object());
  const std::string want = dt.is_object() ? dt.value("sha256", "") : "";
  check(want.empty() || want == tok.content_hash(),
        "the model's tokenizer (" + tok.name() + ", sha256 " + tok.content_hash().substr(0, 12) +
            "...) is not the one dataset '" + data.string() + "' was prepared with (sha256 " + want.substr(0, 12) +
            "...): the model was trained on other data; evaluate a model trained on this dataset, or prepare the "
            "pairs with `--tokenizer` set to the model's tokenizer");
  TranslateOptions o = given;
  if (o.max_new_tokens <= 0) o.max_new_tokens = ds.meta.value("max_tokens", 64) + 8;
  TranslationEval e;
  e.split = split;
  e.beam = o.beam;
  e.pairs = std::move(ds.pairs);
  if (o.limit > 0 && static_cast<size_t>(o.limit) < e.pairs.size()) e.pairs.resize(static_cast<size_t>(o.limit));
  const auto t0 = std::chrono::steady_clock::now();
  e.hypotheses = translate(model, tok, ds.format, e.pairs, o, &e.generated_tokens, &e.hit_length_cap);
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::string> refs;
  refs.reserve(e.pairs.size());
  for (const auto& p : e.pairs) refs.push_back(p.target);
  e.bleu = corpus_bleu(e.hypotheses, refs);
  e.chrf = corpus_chrf(e.hypotheses, refs);
  return e;
}

nlohmann::ordered_json to_json(const TranslationEval& e, const fs::path& model, const fs::path& data) {
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (size_t i = 0; i < e.pairs.size(); ++i)
    items.push_back({{"source", e.pairs[i].source},
                     {"reference", e.pairs[i].target},
                     {"hypothesis", e.hypotheses[i]},
                     {"origin", e.pairs[i].origin}});
  return {{"format", "gpt2lab translation eval"},
          {"model", fs::absolute(model).lexically_normal().string()},
          {"data", fs::absolute(data).lexically_normal().string()},
          {"split", e.split},
          {"beam", e.beam},
          {"pairs", e.pairs.size()},
          {"bleu", e.bleu.score},
          {"bleu_detail",
           {{"precisions", e.bleu.precisions},
            {"brevity_penalty", e.bleu.brevity_penalty},
            {"hyp_len", e.bleu.hyp_len},
            {"ref_len", e.bleu.ref_len},
            {"tokenize", "13a"}}},
          {"chrf", e.chrf.score},
          {"chrf_detail", {{"beta", 2}, {"char_order", 6}}},
          {"generated_tokens", e.generated_tokens},
          {"hit_length_cap", e.hit_length_cap},
          {"seconds", e.seconds},
          {"items", items}};
}

}  // namespace gpt2lab

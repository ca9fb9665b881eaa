#include "study/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "data/token_shard.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/sample/generate.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "train/dataloader.h"
#include "train/run_dir.h"

namespace gpt2lab {

HiddenUnitSpread hidden_unit_spread(const GPT2<float>& model, int layer) {
  const ModelConfig& c = model.config();
  check(layer >= 0 && layer < c.n_layer, "hidden_unit_spread: no layer " + std::to_string(layer));
  const size_t C = static_cast<size_t>(c.n_embd), H = 4 * C;
  const LayerOffsets& o = model.layout().layers[static_cast<size_t>(layer)];
  const float* W = model.params() + o.c_fc_w;  // (C, H): row c, column j
  const float* bias = model.params() + o.c_fc_b;

  HiddenUnitSpread s;
  s.layer = layer;
  s.units = static_cast<int>(H);
  double var_sum = 0, sq_sum = 0;
  for (size_t r = 0; r < C; ++r) {
    const float* row = W + r * H;
    double mean = 0;
    for (size_t j = 0; j < H; ++j) mean += row[j];
    mean /= static_cast<double>(H);
    double var = 0;
    for (size_t j = 0; j < H; ++j) {
      const double d = row[j] - mean;
      var += d * d;
      sq_sum += static_cast<double>(row[j]) * row[j];
    }
    var_sum += var / static_cast<double>(H);
  }
  s.spread = std::sqrt(var_sum / static_cast<double>(C));
  s.weight_rms = std::sqrt(sq_sum / static_cast<double>(C * H));
  s.relative_spread = s.weight_rms > 0 ? s.spread / s.weight_rms : 0.0;

  // Distinct units: sort the columns (weights then bias, compared bitwise)
  // and count the runs of equal ones.
  auto column_less = [&](size_t a, size_t b) {
    for (size_t r = 0; r < C; ++r) {
      uint32_t x, y;
      std::memcpy(&x, W + r * H + a, 4);
      std::memcpy(&y, W + r * H + b, 4);
      if (x != y) return x < y;
    }
    uint32_t x, y;
    std::memcpy(&x, bias + a, 4);
    std::memcpy(&y, bias + b, 4);
    return x < y;
  };
  std::vector<size_t> order(H);
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), column_less);
  s.distinct_units = H > 0 ? 1 : 0;
  for (size_t i = 1; i < H; ++i)
    if (column_less(order[i - 1], order[i])) ++s.distinct_units;
  return s;
}

nlohmann::json to_json(const HiddenUnitSpread& s) {
  return {{"layer", s.layer},   {"units", s.units},           {"distinct_units", s.distinct_units},
          {"spread", s.spread}, {"weight_rms", s.weight_rms}, {"relative_spread", s.relative_spread}};
}

std::string sanitize_utf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80)
      len = 1, cp = c;
    else if ((c & 0xE0) == 0xC0)
      len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
      len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
      len = 4, cp = c & 0x07;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80)
        ok = false;
      else
        cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Reject overlong forms, surrogates and values past U+10FFFF, as a
    // strict decoder (and nlohmann::json's dump) would.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF))
      ok = false;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

TextSample draw_sample(const GPT2<float>& model, const Tokenizer& tokenizer, const std::string& prompt, int tokens,
                       float temperature, int top_k, uint64_t seed) {
  check(tokenizer.vocab_size() <= model.config().vocab_size,
        "the tokenizer has " + std::to_string(tokenizer.vocab_size()) + " tokens but the model only " +
            std::to_string(model.config().vocab_size));
  std::vector<int> ids = {tokenizer.eot_id()};
  std::vector<int> p = tokenizer.encode(prompt, /*allow_special=*/false);
  // A prompt may take at most half of the context window (a small vocabulary
  // spells it in many tokens); the rest is for the continuation.
  const size_t max_prompt = static_cast<size_t>(std::max(0, model.config().block_size / 2 - 1));
  if (p.size() > max_prompt) p.resize(max_prompt);
  ids.insert(ids.end(), p.begin(), p.end());
  const int room = model.config().block_size - static_cast<int>(ids.size());
  SamplingOptions o;
  o.max_new_tokens = std::min(tokens, room);
  o.temperature = temperature;
  o.top_k = top_k;
  o.seed = seed;
  o.eot_id = tokenizer.eot_id();
  o.stop_at_eot = false;
  const std::vector<int> out = generate(model, ids, o);
  TextSample s;
  s.prompt = sanitize_utf8(tokenizer.decode(p));
  s.text = sanitize_utf8(tokenizer.decode(out));
  s.tokens = static_cast<int>(out.size());
  s.quality = text_quality(s.text);
  s.context = std::move(ids);
  s.generated = out;
  return s;
}

nlohmann::json to_json(const TextSample& s) {
  return {{"prompt", s.prompt},
          {"text", s.text},
          {"tokens", s.tokens},
          {"words", s.quality.words},
          {"distinct_1", s.quality.distinct_1},
          {"distinct_2", s.quality.distinct_2},
          {"repeated_4gram_rate", s.quality.repeated_4gram_rate}};
}

namespace {

// A row's step when it is one the trainer could have written (an integer of
// 0 to 2^40); an edited one (1e300 once became INT64_MIN through an
// undefined conversion, a string half-applied its row) skips the row, like
// a torn one.
std::optional<long> row_step(const nlohmann::json& row) {
  const auto it = row.find("step");
  if (it == row.end()) return std::nullopt;
  constexpr uint64_t kMax = uint64_t{1} << 40;
  if (it->is_number_unsigned() && it->get<uint64_t>() <= kMax) return static_cast<long>(it->get<uint64_t>());
  if (it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= static_cast<int64_t>(kMax))
    return static_cast<long>(it->get<int64_t>());
  return std::nullopt;
}

}  // namespace

nlohmann::json outcome_from_metrics(const std::filesystem::path& run, const std::string& status) {
  nlohmann::json o = {{"status", status}};
  long steps = 0;
  double last_loss = NAN, val_loss = NAN, min_loss = INFINITY;
  long val_step = -1;
  nlohmann::json curve = nlohmann::json::array();  // [step, val loss] pairs
  for (const nlohmann::json& row : run_dir::read_metrics(run)) {
    // A row whose fields have other types than the trainer writes (an edited
    // file) is skipped like a torn one: value() throws on a type mismatch.
    const std::optional<long> step = row_step(row);
    if (!step) continue;
    try {
      if (row.contains("diverged")) {
        o["diverged_at"] = *step;
        o["reason"] = row.value("reason", "");
      } else if (row.contains("val_loss") && row["val_loss"].is_number()) {
        val_loss = row["val_loss"].get<double>();
        val_step = *step;
        if (std::isfinite(val_loss)) curve.push_back({val_step, val_loss});
      } else if (row.contains("loss") && row["loss"].is_number()) {
        last_loss = row["loss"].get<double>();
        min_loss = std::min(min_loss, last_loss);
        steps = *step + 1;
      }
    } catch (const nlohmann::json::exception&) {
    }
  }
  o["steps"] = steps;
  if (std::isfinite(last_loss)) o["last_loss"] = last_loss;
  if (std::isfinite(min_loss)) o["min_loss"] = min_loss;
  if (std::isfinite(val_loss)) {
    o["val_loss"] = val_loss;
    o["val_step"] = val_step;
    o["val_ppl"] = std::exp(val_loss);
  }
  o["val_curve"] = std::move(curve);
  return o;
}

nlohmann::json spikes_from_metrics(const std::filesystem::path& run, double limit) {
  long spikes = 0;
  nlohmann::json starts = nlohmann::json::array();
  long open_at = -1;  // first step of the excursion in progress
  for (const nlohmann::json& row : run_dir::read_metrics(run)) {
    if (row.contains("diverged") || !row.contains("loss") || !row["loss"].is_number() || !row.contains("step") ||
        !row["step"].is_number_integer())
      continue;
    const double loss = row["loss"].get<double>();
    const long step = row["step"].get<long>();
    if (loss > limit) {
      if (open_at < 0) open_at = step;
    } else if (open_at >= 0) {
      ++spikes;
      starts.push_back(open_at);
      open_at = -1;
    }
  }
  return {{"spikes", spikes}, {"spike_steps", starts}};
}

std::optional<UnigramBaselines> unigram_baselines(const std::filesystem::path& data_dir, int vocab) {
  const auto val_files = find_split_files(data_dir, "val", false);
  if (val_files.empty() || vocab <= 0) return std::nullopt;
  std::vector<double> counts(static_cast<size_t>(vocab), 1.0);  // add-one
  double total = vocab;
  for (const auto& f : find_split_files(data_dir, "train")) {
    const TokenShard shard = TokenShard::open(f);  // a temporary would be unmapped before the loop
    for (const uint16_t t : shard.tokens())
      if (t < vocab) {
        counts[t] += 1;
        total += 1;
      }
  }
  // The train split's own tokens are its counts less the added one: no second pass.
  double train_nll = 0;
  for (const double c : counts) train_nll -= (c - 1) * std::log(c / total);
  const double train_n = total - vocab;
  double nll = 0;
  size_t n = 0;
  for (const auto& f : val_files) {
    const TokenShard shard = TokenShard::open(f);
    for (const uint16_t t : shard.tokens())
      if (t < vocab) {
        nll -= std::log(counts[t] / total);
        ++n;
      }
  }
  if (n == 0 || train_n == 0) return std::nullopt;
  return UnigramBaselines{nll / static_cast<double>(n), train_nll / train_n};
}

nlohmann::json baselines_json(const std::optional<UnigramBaselines>& unigram, int vocab) {
  nlohmann::json base = {{"uniform", std::log(static_cast<double>(vocab))}};
  if (unigram) {
    base["unigram_val"] = unigram->val;
    base["unigram_train"] = unigram->train;
  }
  return base;
}

}  // namespace gpt2lab

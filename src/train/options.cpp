#include "gpt2lab/train/options.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/core/thread_count.h"
#include "train/provenance.h"

namespace gpt2lab {

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kLongMax = int64_t{1} << 62;  // room for step arithmetic
constexpr double kFloatMax = std::numeric_limits<float>::max();

// A number as a person would type it back (%g).
std::string number_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// A field's JSON value; floats as the decimal they were given as.
template <class T>
nlohmann::json json_value(const T& v) {
  if constexpr (std::is_same_v<T, float>)
    return float_as_decimal(v);
  else
    return v;
}

// A row whose field is reached by `ref` (a generic lambda returning a
// reference), so get and set are written once for both constnesses.
template <class Ref>
OptionSpec row(OptionType type, std::string key, std::string flag, std::string help, Ref ref) {
  OptionSpec s;
  s.type = type;
  s.key = std::move(key);
  s.flag = std::move(flag);
  s.help = std::move(help);
  s.get = [ref](const TrainOptions& o) { return json_value(ref(o)); };
  s.set = [ref](TrainOptions& o, const nlohmann::json& v) {
    auto& field = ref(o);
    field = v.get<std::remove_reference_t<decltype(field)>>();
  };
  return s;
}

template <class Ref>
OptionSpec integer(std::string key, std::string flag, std::string help, int64_t lo, int64_t hi, Ref ref) {
  OptionSpec s = row(OptionType::integer, std::move(key), std::move(flag), std::move(help), ref);
  s.int_min = lo;
  s.int_max = hi;
  return s;
}

template <class Ref>
OptionSpec real(std::string key, std::string flag, std::string help, double lo, double hi, Ref ref) {
  OptionSpec s = row(OptionType::real, std::move(key), std::move(flag), std::move(help), ref);
  s.real_min = lo;
  s.real_max = hi;
  return s;
}

OptionSpec with(OptionSpec s, auto&& edit) {
  edit(s);
  return s;
}

// A member path, not an expression: it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define FIELD(expr) \
  [](auto& o) -> auto& { return o.expr; }
// NOLINTEND(bugprone-macro-parentheses)

// One row per option: a table, so its length is the number of options.
// NOLINTNEXTLINE(readability-function-size)
OptionTable make_train_table() {
  using T = OptionType;
  OptionTable t;
  t.push_back(row(T::path, "init_from", "--init-from",
                  "Start from this checkpoint (fine-tuning); the model flags are then taken from it",
                  FIELD(init_from)));
  // int_max -1: the whole uint64 range (seeds are 64-bit).
  t.push_back(integer("seed", "--seed", "Random seed (init, data order)", 0, -1, FIELD(seed)));
  t.push_back(
      row(T::path, "data", "--data", "Directory with train*.bin and val*.bin shards (llm.c format)", FIELD(data)));
  t.push_back(with(row(T::path, "", "--out", "Run directory", FIELD(out)),
                   [](OptionSpec& s) { s.on_resume = OnResume::per_call; }));
  t.push_back(integer("batch_size", "--batch-size,-B", "Sequences per micro-batch (B)", 1, kIntMax, FIELD(batch_size)));
  t.push_back(
      integer("seq_len", "--seq-len,-T", "Tokens per sequence (T), at most --block-size", 1, kIntMax, FIELD(seq_len)));
  t.push_back(
      integer("accum", "--accum", "Micro-batches per update (gradient accumulation)", 1, kIntMax, FIELD(accum)));
  t.push_back(with(integer("steps", "--steps", "Optimizer updates", 1, kLongMax, FIELD(steps)),
                   [](OptionSpec& s) { s.on_resume = OnResume::may_change; }));
  t.push_back(with(real("lr", "--lr", "Peak learning rate", 0, kFloatMax, FIELD(schedule.lr)),
                   [](OptionSpec& s) { s.real_min_open = true; }));
  t.push_back(real("min_lr", "--min-lr", "Final learning rate of cosine/linear decay (default lr/10)", 0, kFloatMax,
                   FIELD(schedule.min_lr)));
  t.push_back(integer("warmup", "--warmup", "Linear warmup steps (0 = none)", 0, kLongMax, FIELD(schedule.warmup)));
  OptionSpec schedule;
  schedule.key = "schedule";
  schedule.flag = "--schedule";
  schedule.help = "After warmup: cosine, linear or constant";
  schedule.type = T::choice;
  schedule.choices = {"cosine", "linear", "constant"};
  schedule.get = [](const TrainOptions& o) { return nlohmann::json(to_string(o.schedule.kind)); };
  schedule.set = [](TrainOptions& o, const nlohmann::json& v) {
    o.schedule.kind = parse_schedule(v.get<std::string>());
  };
  t.push_back(schedule);
  auto unit = [](OptionSpec s) {
    s.real_max = 1;
    s.real_max_open = true;
    return s;
  };
  t.push_back(unit(real("beta1", "--beta1", "AdamW beta1", 0, 1, FIELD(adam.beta1))));
  t.push_back(unit(real("beta2", "--beta2", "AdamW beta2", 0, 1, FIELD(adam.beta2))));
  t.push_back(real("eps", "--eps", "AdamW epsilon", std::numeric_limits<float>::min(), 1, FIELD(adam.eps)));
  t.push_back(real("weight_decay", "--weight-decay", "Decoupled weight decay (matrices and embeddings only)", 0,
                   kFloatMax, FIELD(adam.weight_decay)));
  t.push_back(real("grad_clip", "--grad-clip", "Clip the global gradient norm to this (0 = off)", 0,
                   std::numeric_limits<double>::max(), FIELD(grad_clip)));
  t.push_back(real("max_loss", "--max-loss", "Treat a loss above this as divergence (0 = off)", 0,
                   std::numeric_limits<double>::max(), FIELD(max_loss)));
  t.push_back(with(integer("max_loss_window", "--max-loss-window",
                           "Steps the loss may stay above --max-loss and recover (a spike) before the run counts as "
                           "diverged (0 = at once)",
                           0, kLongMax, FIELD(max_loss_window)),
                   [](OptionSpec& s) { s.required = false; }));
  t.push_back(integer("eval_every", "--eval-every", "Validate every N steps (0 = only at the end)", 0, kLongMax,
                      FIELD(eval_every)));
  t.push_back(
      integer("eval_batches", "--eval-batches", "Validation batches per evaluation", 1, kLongMax, FIELD(eval_batches)));
  t.push_back(integer("save_every", "--save-every", "Checkpoint every N steps (0 = only at the end)", 0, kLongMax,
                      FIELD(save_every)));
  t.push_back(integer("diag_every", "--diag-every", "Per-layer diagnostics every N steps (and at step 0)", 0, kLongMax,
                      FIELD(diag_every)));
  t.push_back(with(integer("log_every", "--log-every", "Progress line every N steps when not on a terminal", 0,
                           kLongMax, FIELD(log_every)),
                   [](OptionSpec& s) { s.on_resume = OnResume::may_change; }));
  t.push_back(row(T::boolean, "shuffle", "--shuffle", "Visit batch windows in a seeded random order", FIELD(shuffle)));
  t.push_back(with(row(T::boolean, "bf16", "--bf16",
                       "Mixed precision: matmul inputs in bf16 (AVX512-BF16), fp32 accumulation, fp32 weights and "
                       "optimizer",
                       FIELD(bf16)),
                   [](OptionSpec& s) { s.required = false; }));
  t.push_back(with(
      integer("zero", "--zero", "Under mpirun: 1 shards the AdamW moments across ranks (ZeRO-1)", 0, 1, FIELD(zero)),
      [](OptionSpec& s) { s.required = false; }));
  t.push_back(with(real("bucket_mb", "--bucket-mb",
                        "Under mpirun: gradient bucket size in MB; each bucket's sum starts during backward as soon as "
                        "its layers are done (0 = one blocking sum after backward)",
                        0, 1e6, FIELD(bucket_mb)),
                   [](OptionSpec& s) {
                     s.required = false;
                     s.on_resume = OnResume::may_change;
                   }));
  t.push_back(with(real("comm_timeout", "--comm-timeout",
                        "Under mpirun: seconds a rank waits in one collective before it ends the job with an error "
                        "(a dead host or link; 0 = wait forever)",
                        0, 1e6, FIELD(comm_timeout)),
                   [](OptionSpec& s) {
                     s.required = false;
                     s.on_resume = OnResume::may_change;
                   }));
  // Set by train() to the job's rank count; --resume on another count
  // rescales --accum (see Trainer), so it is not compared.
  t.push_back(with(integer("world", "", "Ranks the run was started with", 1, 1 << 20, FIELD(world)), [](OptionSpec& s) {
    s.required = false;
    s.on_resume = OnResume::may_change;
  }));
  t.push_back(with(
      integer("threads", "--threads", "Threads for kernels and BLAS (0 = all cores)", 0, kMaxThreads, FIELD(threads)),
      [](OptionSpec& s) { s.on_resume = OnResume::may_change; }));
  t.push_back(row(T::path, "tokenizer", "--tokenizer", "Tokenizer to record with the checkpoint (gpt2 or DIR)",
                  FIELD(tokenizer)));
  auto per_call = [](OptionSpec s) {
    s.on_resume = OnResume::per_call;
    return s;
  };
  t.push_back(
      per_call(row(T::boolean, "", "--resume", "Continue the run in --out from its last checkpoint", FIELD(resume))));
  t.push_back(per_call(row(T::boolean, "", "--force", "Replace an existing run in --out", FIELD(force))));
  t.push_back(per_call(row(T::boolean, "", "--quiet", "No progress output", FIELD(quiet))));
  t.push_back(with(per_call(integer("", "--inject-nan-at", "Testing aid: inject a fault at this step", -1, kLongMax,
                                    FIELD(inject_nan_at))),
                   [](OptionSpec& s) { s.hidden = true; }));
  t.push_back(with(per_call(row(T::choice, "", "--inject-kind",
                                "Testing aid: nan-grad, inf-grad, nan-activation, inf-activation", FIELD(inject_kind))),
                   [](OptionSpec& s) {
                     s.choices = {"nan-grad", "inf-grad", "nan-activation", "inf-activation"};
                     s.hidden = true;
                   }));
  return t;
}

#undef FIELD

std::string range_text(const OptionSpec& s) {
  if (s.type == OptionType::integer) {
    if (s.int_max < 0) return "an integer in [0, 18446744073709551615]";
    return "an integer in [" + std::to_string(s.int_min) + ", " + std::to_string(s.int_max) + "]";
  }
  const bool no_max = s.real_max >= std::numeric_limits<double>::max();
  return "a finite number " + std::string(s.real_min_open ? "> " : ">= ") + number_text(s.real_min) +
         (no_max ? "" : std::string(s.real_max_open ? " and < " : " and <= ") + number_text(s.real_max));
}

void check_integer(const OptionSpec& s, const nlohmann::json& v, const std::string& name) {
  check(v.is_number_integer(), name + " must be " + range_text(s) + " (got " + v.dump() + ")");
  if (s.int_max < 0) {  // the whole uint64 range
    check(v.is_number_unsigned() || v.get<int64_t>() >= 0,
          name + " must be " + range_text(s) + " (got " + v.dump() + ")");
    return;
  }
  const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= static_cast<uint64_t>(s.int_max)
                                           : v.get<int64_t>() >= s.int_min && v.get<int64_t>() <= s.int_max;
  check(fits && (!v.is_number_unsigned() || s.int_min <= 0 || v.get<uint64_t>() >= static_cast<uint64_t>(s.int_min)),
        name + " = " + v.dump() + " is out of range: it must be " + range_text(s));
}

void check_real(const OptionSpec& s, const nlohmann::json& v, const std::string& name) {
  check(v.is_number(), name + " must be " + range_text(s) + " (got " + v.dump() + ")");
  const double d = v.get<double>();
  const bool ok = std::isfinite(d) && (s.real_min_open ? d > s.real_min : d >= s.real_min) &&
                  (s.real_max_open ? d < s.real_max : d <= s.real_max);
  check(ok, name + " = " + number_text(d) + " is out of range: it must be " + range_text(s));
}

}  // namespace

std::string OptionSpec::name() const {
  if (flag.empty()) return key;
  return flag.substr(0, flag.find(','));
}

const OptionTable& train_option_table() {
  static const OptionTable table = make_train_table();
  return table;
}

void check_value(const OptionSpec& s, const nlohmann::json& v, const std::string& name) {
  switch (s.type) {
    case OptionType::integer: return check_integer(s, v, name);
    case OptionType::real: return check_real(s, v, name);
    case OptionType::boolean: check(v.is_boolean(), name + " must be true or false"); return;
    case OptionType::text:
    case OptionType::path: check(v.is_string(), name + " must be a string"); return;
    case OptionType::choice: {
      std::string list;
      bool found = false;
      for (const auto& c : s.choices) {
        list += (list.empty() ? "" : ", ") + c;
        found = found || (v.is_string() && v.get<std::string>() == c);
      }
      check(found, name + " = " + v.dump() + " is not one of " + list);
      return;
    }
  }
}

nlohmann::json value_from_text(const OptionSpec& s, const std::string& text) {
  const std::string name = s.name();
  const char* b = text.data();
  const char* e = text.data() + text.size();
  switch (s.type) {
    case OptionType::integer: {
      if (s.int_max < 0) {
        uint64_t u = 0;
        const auto r = std::from_chars(b, e, u);
        check(!text.empty() && r.ec == std::errc() && r.ptr == e, name + ": '" + text + "' is not " + range_text(s));
        return u;
      }
      int64_t i = 0;
      const auto r = std::from_chars(b, e, i);
      check(!text.empty() && r.ec == std::errc() && r.ptr == e,
            name + ": '" + text + "' is not a decimal integer within 64 bits");
      return i;
    }
    case OptionType::real: {
      double d = 0;
      const auto r = std::from_chars(b, e, d, std::chars_format::general);
      check(!text.empty() && r.ec == std::errc() && r.ptr == e, name + ": '" + text + "' is not a decimal number");
      return d;
    }
    case OptionType::boolean:
      check(text == "true" || text == "false", name + ": '" + text + "' is not true or false");
      return text == "true";
    default: return text;
  }
}

nlohmann::json to_json(const TrainOptions& o, const OptionTable& table) {
  nlohmann::json j = {{"model", to_json(o.model)}};
  for (const OptionSpec& s : table)
    if (!s.key.empty()) j[s.key] = s.get(o);
  return j;
}

TrainOptions train_options_from_json(const nlohmann::json& j, const std::string& where, const OptionTable& table) {
  check(j.is_object(), where + ": expected a JSON object");
  TrainOptions o;
  check(j.contains("model"), where + ": missing field 'model'");
  o.model = config_from_json(j.at("model"), where + ": model");
  for (const OptionSpec& s : table) {
    if (s.key.empty()) continue;
    const auto it = j.find(s.key);
    if (it == j.end()) {
      check(!s.required, where + ": missing field '" + s.key + "'");
      continue;
    }
    check_value(s, *it, where + ": field '" + s.key + "'");
    s.set(o, *it);
  }
  return o;
}

void validate(const TrainOptions& o, const OptionTable& table) {
  for (const OptionSpec& s : table) check_value(s, s.get(o), s.name());
  const LrSchedule& sc = o.schedule;
  check(sc.kind == ScheduleKind::constant || sc.min_lr <= sc.lr,
        "--min-lr " + number_text(sc.min_lr) + " is above the peak --lr " + number_text(sc.lr) +
            "; the schedule decays from --lr down to --min-lr");
  // The optimizer runs in float: a rate or coefficient that rounds to zero
  // (or to a denormal) would act as if unset.
  constexpr float kTiny = std::numeric_limits<float>::min();
  check(static_cast<float>(sc.lr) >= kTiny,
        "--lr " + number_text(sc.lr) + " is too small for the float optimizer (at least 1.2e-38)");
  auto float_or_zero = [&](double v, const char* flag) {
    check(v == 0 || std::abs(v) >= kTiny,
          std::string(flag) + " " + number_text(v) + " is too small for a float (0, or at least 1.2e-38)");
  };
  float_or_zero(sc.min_lr, "--min-lr");
  float_or_zero(o.adam.weight_decay, "--weight-decay");
  float_or_zero(o.adam.beta1, "--beta1");
  float_or_zero(o.adam.beta2, "--beta2");
  check(sc.warmup <= o.steps, "--warmup " + std::to_string(sc.warmup) + " is longer than --steps " +
                                  std::to_string(o.steps) + ": the peak learning rate would never be reached");
  check(o.grad_clip == 0 || o.grad_clip >= 1e-20,
        "--grad-clip " + number_text(o.grad_clip) + " would scale every update to nothing (0 turns clipping off)");
  check(!o.out.empty(), "--out is required");
  check(!o.data.empty(), "--data is required");
  // Guard the int index math of the kernels: N * max(4C, Vp) must fit.
  check(static_cast<double>(o.batch_size) * o.seq_len < 1e8, "--batch-size x --seq-len is too large");
}

std::optional<std::pair<std::string, std::string>> resume_conflict(
    const nlohmann::json& saved, const nlohmann::json& given, const std::vector<const OptionSpec*>& given_options) {
  for (const OptionSpec* s : given_options) {
    if (s->key.empty() || s->on_resume != OnResume::fixed) continue;
    const auto a = saved.find(s->key);
    const auto b = given.find(s->key);
    bool same = a != saved.end() && b != given.end() && *a == *b;
    if (!same && a != saved.end() && b != given.end() && a->is_number() && b->is_number())
      same = std::abs(a->get<double>() - b->get<double>()) <= 1e-6 * std::abs(a->get<double>());
    // Paths name the same thing however they were typed.
    if (!same && s->type == OptionType::path && a != saved.end() && b != given.end() && a->is_string() &&
        b->is_string())
      same = resolved_spec(a->get<std::string>()) == resolved_spec(b->get<std::string>());
    if (!same) return std::pair{s->name(), a != saved.end() ? a->dump() : std::string("unset")};
  }
  return std::nullopt;
}

}  // namespace gpt2lab

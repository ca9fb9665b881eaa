#include "train/provenance.h"

#include <unistd.h>

#include <cerrno>

#include "core/file.h"
#include "core/json.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "tokenizer/sha256.h"
#include "train/run_dir.h"

namespace gpt2lab {

namespace {

std::string file_sha256(const fs::path& path) { return sha256_file(path.string()); }

std::string field_text(const nlohmann::json& j, const std::string& pointer) {
  const nlohmann::json::json_pointer p(pointer);
  return j.contains(p) ? j.at(p).dump() : "absent";
}

}  // namespace

std::string resolved_spec(const std::string& spec) {
  if (spec.empty() || spec == "gpt2") return spec;
  return fs::absolute(spec).lexically_normal().string();
}

TokenizerRecord tokenizer_record(const std::string& given, const fs::path& data) {
  TokenizerRecord meta_rec;
  std::error_code ec;
  const fs::path meta = data / "meta.json";
  if (fs::exists(meta, ec)) {
    // What meta.json says is recorded with every checkpoint: a malformed
    // one is refused, not skipped.
    const std::string where = meta.string();
    const nlohmann::json j = read_json_file(meta);
    check(j.is_object(), where + ": expected a JSON object");
    check(!j.contains("format") || j["format"] == "gpt2lab dataset",
          where + ": field 'format' is " + (j.contains("format") ? j["format"].dump() : "") +
              ", not \"gpt2lab dataset\"");
    check(!j.contains("version") || j["version"] == 1,
          where + ": version " + (j.contains("version") ? j["version"].dump() : "") +
              " is not one this gpt2lab reads (1); prepare the data again with this version");
    if (j.contains("tokenizer")) {
      const auto& t = j["tokenizer"];
      check(t.is_object(), where + ": field 'tokenizer' must be an object");
      auto text = [&](const char* key) {
        if (!t.contains(key)) return std::string();
        check(t[key].is_string(), where + ": field 'tokenizer." + key + "' must be a string");
        return t[key].get<std::string>();
      };
      meta_rec.spec = text("spec");
      meta_rec.sha256 = text("sha256");
      check(meta_rec.sha256.empty() || (meta_rec.sha256.size() == 64 &&
                                        meta_rec.sha256.find_first_not_of("0123456789abcdef") == std::string::npos),
            where + ": field 'tokenizer.sha256' is not a sha256 (64 lower-case hex digits)");
      if (t.contains("vocab_size")) {
        check(t["vocab_size"].is_number_integer() && t["vocab_size"].get<int64_t>() > 0 &&
                  t["vocab_size"].get<int64_t>() <= 65536,  // token shards hold uint16 ids
              where + ": field 'tokenizer.vocab_size' = " + t["vocab_size"].dump() + " is not a vocabulary size");
        meta_rec.vocab_size = static_cast<int>(t["vocab_size"].get<int64_t>());
      }
    }
  }
  if (given.empty()) {
    // A meta.json written before paths were resolved may name its tokenizer
    // relative to wherever prepare ran: kept as written (resolving it here
    // could name a different folder); the sha256 still identifies it.
    if (!meta_rec.spec.empty() && meta_rec.spec != "gpt2" && fs::path(meta_rec.spec).is_relative()) return meta_rec;
    check(meta_rec.spec.empty() || meta_rec.spec == "gpt2" || fs::exists(meta_rec.spec, ec),
          meta.string() + " names the tokenizer '" + meta_rec.spec +
              "', which does not exist (moved?); pass it with --tokenizer DIR");
    if (meta_rec.spec.empty()) return meta_rec;
    // What meta.json says of the tokenizer is checked against the tokenizer
    // itself: it is what every checkpoint of the run will record.
    const Tokenizer tok = Tokenizer::resolve(meta_rec.spec);
    check(meta_rec.sha256.empty() || meta_rec.sha256 == tok.content_hash(),
          meta.string() + " records tokenizer sha256 " + meta_rec.sha256.substr(0, 12) + "... but '" + meta_rec.spec +
              "' now holds sha256 " + tok.content_hash().substr(0, 12) +
              "...: the tokenizer changed since the data was prepared; prepare it again");
    check(meta_rec.vocab_size == 0 || meta_rec.vocab_size == tok.vocab_size(),
          meta.string() + " records a vocabulary of " + std::to_string(meta_rec.vocab_size) + " tokens but '" +
              meta_rec.spec + "' has " + std::to_string(tok.vocab_size()));
    return {meta_rec.spec, tok.content_hash(), tok.vocab_size(), true};
  }
  const Tokenizer tok = Tokenizer::resolve(given);
  TokenizerRecord rec{resolved_spec(given), tok.content_hash(), tok.vocab_size(), false};
  check(meta_rec.sha256.empty() || meta_rec.sha256 == rec.sha256,
        "--tokenizer " + given + " (sha256 " + rec.sha256.substr(0, 12) + "...) is not the tokenizer the data in '" +
            data.string() + "' was prepared with (" + meta_rec.spec + ", sha256 " + meta_rec.sha256.substr(0, 12) +
            "... in meta.json); its token ids would be decoded as other text");
  return rec;
}

nlohmann::json checkpoint_identity(const fs::path& dir) {
  return {{"path", fs::absolute(dir).lexically_normal().string()},
          {"config_sha256", file_sha256(dir / kConfigFile)},
          {"weights_sha256", file_sha256(dir / kWeightsFile)}};
}

void check_init_from_tokenizer(const fs::path& init_from, const std::string& data_tokenizer_sha256) {
  if (data_tokenizer_sha256.empty()) return;
  const nlohmann::json cfg = read_config_json(init_from);
  if (!cfg.contains("tokenizer_sha256") || !cfg["tokenizer_sha256"].is_string()) return;
  const std::string had = cfg["tokenizer_sha256"].get<std::string>();
  check(had == data_tokenizer_sha256,
        "--init-from '" + init_from.string() + "' was trained with another tokenizer (sha256 " + had.substr(0, 12) +
            "...) than the one the data was prepared with (sha256 " + data_tokenizer_sha256.substr(0, 12) +
            "...); fine-tuning would read the data's token ids as other text");
}

void check_state_consistency(const fs::path& run, const CheckpointState& state, const nlohmann::json& saved_config,
                             long micro_batches_per_step) {
  const std::string where = (run / run_dir::kCheckpoint / run_dir::kState).string();
  auto refuse = [&](const std::string& what) {
    throw Error("--resume: " + where + " is inconsistent (" + what +
                "); it was edited or damaged: restore it, or start over with --force");
  };
  if (state.seed >= 0 && saved_config.contains("seed") && saved_config["seed"].is_number_integer() &&
      saved_config["seed"].get<int64_t>() != state.seed)
    refuse("seed " + std::to_string(state.seed) + ", the run's is " + saved_config["seed"].dump());
  // One optimizer update and accum x ranks batches per step, from step 0.
  if (state.adam_t != state.step)
    refuse("adam_t " + std::to_string(state.adam_t) + " after " + std::to_string(state.step) + " steps");
  if (state.data_position != static_cast<int64_t>(state.step) * micro_batches_per_step)
    refuse("data_position " + std::to_string(state.data_position) + " after " + std::to_string(state.step) +
           " steps of " + std::to_string(micro_batches_per_step) + " batches");
  if (!run_dir::metrics_as_saved(run, state))
    refuse("the first " + std::to_string(state.metrics_bytes) + " bytes of " + run_dir::kMetrics +
           " are not the ones it saw: their sha256 differs from metrics_sha256");
  if (state.step == 0) return;
  // The metrics the checkpoint kept end with its last step's train row.
  const std::string tail = read_file_tail(run / run_dir::kMetrics, state.metrics_bytes, 1 << 16);
  long last_step = -1;
  for (size_t end = tail.size(); end > 0 && last_step < 0;) {
    const size_t start = tail.rfind('\n', end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    const auto row = try_parse_json_line(std::string_view(tail).substr(from, end - from));
    if (row && row->is_object() && row->contains("loss") && row->contains("lr") && row->contains("step")) {
      const nlohmann::json& step = (*row)["step"];  // nlohmann reads every integer >= 0 as unsigned
      if (step.is_number_unsigned() && step.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX))
        last_step = step.get<long>();
    }
    if (start == std::string::npos) break;
    end = start;
  }
  if (last_step != state.step - 1)
    refuse("step " + std::to_string(state.step) + " but the metrics it kept (metrics_bytes " +
           std::to_string(state.metrics_bytes) + ") end with " +
           (last_step < 0 ? std::string("no train step") : "step " + std::to_string(last_step)));
}

void check_checkpoint_model(const fs::path& checkpoint, const ModelConfig& built_config, const std::string& prefix,
                            const std::string& built_by) {
  const nlohmann::json built = to_json(built_config);
  const nlohmann::json ckpt = to_json(load_config(checkpoint));
  // The fields a user sets first: a derived one (architectures follows
  // norm) would name the symptom, not the edit.
  std::string d;
  for (const ModelField& f : model_fields())
    if (d.empty() && built.value(f.key, nlohmann::json()) != ckpt.value(f.key, nlohmann::json())) d = "/" + f.key;
  if (d.empty()) d = run_dir::first_difference(built, ckpt);
  if (!d.empty())
    throw Error(prefix + (checkpoint / kConfigFile).string() + " field '" + d.substr(1) + "' is " +
                field_text(ckpt, d) + " but " + built_by + " " + field_text(built, d) +
                ": the checkpoint's config was edited; restore it");
}

void check_resume_identity(const fs::path& run, const nlohmann::json& saved_config, const CheckpointState& state,
                           bool init_from_will_be_read) {
  const std::string cfg_path = (run / run_dir::kConfig).string();
  if (state.run_config.is_object()) {
    const std::string d = run_dir::first_difference(state.run_config, saved_config);
    if (!d.empty())
      throw Error("--resume: " + cfg_path + " field '" + d.substr(1) + "' is " + field_text(saved_config, d) +
                  " but checkpoint/state.json recorded " + field_text(state.run_config, d) +
                  " when the run started: one of them was edited since; restore it");
  }
  if (saved_config.contains("model") && fs::exists(run / run_dir::kCheckpoint / kConfigFile))
    check_checkpoint_model(run / run_dir::kCheckpoint, config_from_json(saved_config["model"], cfg_path + ": model"),
                           "--resume: ", "the run's config.json has");
  if (saved_config.contains("data_identity") && saved_config.contains("data") && saved_config["data"].is_string()) {
    const nlohmann::json now = run_dir::data_identity(saved_config["data"].get<std::string>());
    const std::string d = run_dir::first_difference(saved_config["data_identity"], now);
    if (!d.empty())
      throw Error("--resume: the data is not what the run started with: " + d.substr(1) + " was " +
                  field_text(saved_config["data_identity"], d) + ", now " + field_text(now, d) + " (" + cfg_path +
                  " records the data's identity); resume with the original data or start a new run");
  }
  if (init_from_will_be_read && saved_config.contains("init_from_identity")) {
    const nlohmann::json& had = saved_config["init_from_identity"];
    const nlohmann::json now = checkpoint_identity(had.value("path", std::string()));
    check(run_dir::first_difference(had, now).empty(),
          "--resume: the --init-from checkpoint '" + had.value("path", std::string()) +
              "' changed since the run started (its sha256 differs from " + cfg_path +
              "'s record); the run would start from other weights");
  }
}

}  // namespace gpt2lab

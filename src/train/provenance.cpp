#include "train/provenance.h"

#include <unistd.h>

#include <cerrno>

#include "core/error.h"
#include "core/file.h"
#include "core/json.h"
#include "io/checkpoint.h"
#include "tokenizer/sha256.h"
#include "tokenizer/tokenizer.h"
#include "train/run_dir.h"

namespace gpt2lab {

namespace {

std::string file_sha256(const fs::path& path) {
  const OpenedFile f = open_regular_file(path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{f.fd};
  Sha256 h;
  std::string buf(1 << 20, '\0');
  for (;;) {
    const ssize_t n = ::read(f.fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    check(n >= 0, "cannot read '" + path.string() + "'");
    if (n == 0) break;
    h.update(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  return h.hex_digest();
}

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
  if (fs::is_regular_file(meta, ec)) {
    const nlohmann::json j = read_json_file(meta);
    if (j.is_object() && j.contains("tokenizer") && j["tokenizer"].is_object()) {
      const auto& t = j["tokenizer"];
      if (t.contains("spec") && t["spec"].is_string()) meta_rec.spec = t["spec"].get<std::string>();
      if (t.contains("sha256") && t["sha256"].is_string()) meta_rec.sha256 = t["sha256"].get<std::string>();
      if (t.contains("vocab_size") && t["vocab_size"].is_number_integer() && t["vocab_size"].get<int64_t>() > 0 &&
          t["vocab_size"].get<int64_t>() <= (1 << 24))
        meta_rec.vocab_size = static_cast<int>(t["vocab_size"].get<int64_t>());
    }
  }
  if (given.empty()) {
    // An older meta.json may name its tokenizer relative to where prepare
    // ran: resolved here only if it exists from here.
    if (!meta_rec.spec.empty() && meta_rec.spec != "gpt2" && fs::path(meta_rec.spec).is_relative() &&
        !fs::exists(meta_rec.spec, ec))
      return meta_rec;
    return {resolved_spec(meta_rec.spec), meta_rec.sha256, meta_rec.vocab_size};
  }
  const Tokenizer tok = Tokenizer::resolve(given);
  TokenizerRecord rec{resolved_spec(given), tok.content_hash(), tok.vocab_size()};
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

void check_resume_identity(const fs::path& run, const nlohmann::json& saved_config, const CheckpointState& state,
                           bool init_from_will_be_read) {
  const std::string cfg_path = (run / run_dir::kConfig).string();
  if (state.run_config.is_object()) {
    const std::string d = run_dir::first_difference(state.run_config, saved_config);
    if (!d.empty()) throw Error("--resume: " + cfg_path + " field '" + d.substr(1) + "' is " + field_text(saved_config, d) +
                         " but the run's checkpoint recorded " + field_text(state.run_config, d) +
                         " (checkpoint/state.json): config.json was edited after the run started; restore it");
  }
  if (saved_config.contains("model") && fs::exists(run / run_dir::kCheckpoint / kConfigFile)) {
    const nlohmann::json built = to_json(config_from_json(saved_config["model"], cfg_path + ": model"));
    const nlohmann::json ckpt = to_json(load_config(run / run_dir::kCheckpoint));
    const std::string d = run_dir::first_difference(built, ckpt);
    if (!d.empty()) throw Error("--resume: " + (run / run_dir::kCheckpoint / kConfigFile).string() + " field '" + d.substr(1) +
                         "' is " + field_text(ckpt, d) + " but the run built " + field_text(built, d) +
                         " (config.json): the checkpoint's config was edited; restore it");
  }
  if (saved_config.contains("data_identity") && saved_config.contains("data") && saved_config["data"].is_string()) {
    const nlohmann::json now = run_dir::data_identity(saved_config["data"].get<std::string>());
    const std::string d = run_dir::first_difference(saved_config["data_identity"], now);
    if (!d.empty()) throw Error("--resume: the data is not what the run started with: " + d.substr(1) + " was " +
                         field_text(saved_config["data_identity"], d) + ", now " + field_text(now, d) + " (" +
                         cfg_path + " records the data's identity); resume with the original data or start a new run");
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

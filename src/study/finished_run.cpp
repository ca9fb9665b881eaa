#include "study/finished_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/file.h"
#include "gpt2lab/core/error.h"
#include "gpt2lab/io/checkpoint.h"
#include "gpt2lab/model/gpt2.h"
#include "gpt2lab/tokenizer/tokenizer.h"
#include "study/analysis.h"
#include "study/ngram_judge.h"
#include "study/residual_stream.h"
#include "study/translation.h"
#include "train/provenance.h"
#include "train/run_dir.h"

namespace gpt2lab {

FinishedRunAnalysis::FinishedRunAnalysis(fs::path out, const Budget& budget, const StudyData& data,
                                         const Tokenizer* tokenizer, const NgramJudge* judge,
                                         const TranslationStudyData* mt, std::optional<double> unigram,
                                         std::function<void(const std::string&)> log)
    : out_(std::move(out)),
      budget_(budget),
      data_(data),
      tokenizer_(tokenizer),
      judge_(judge),
      mt_(mt),
      unigram_(unigram),
      log_(std::move(log)) {}

double FinishedRunAnalysis::plateau_limit() const {
  // Without a val split to measure the unigram baseline on: the uniform loss.
  const double base = unigram_ ? *unigram_ : std::log(static_cast<double>(data_.vocab_size));
  return base - budget_.trains_margin;
}

// BLEU/chrF of a finished translation run (not of a pre-training run).
void FinishedRunAnalysis::translation_scores(const RunSpec& r, StudyJson& rec, const fs::path& ckpt) const {
  if (r.variables.value("arm", "") == "pretrain") return;
  const fs::path dir = out_ / "runs" / r.name;
  rec["translation"] = translation_outcome(ckpt, *mt_, budget_, dir / "translation-test.json");
  char buf[96];
  std::snprintf(buf, sizeof buf, ": BLEU %.2f, chrF %.2f", rec["translation"]["bleu"].get<double>(),
                rec["translation"]["chrf"].get<double>());
  log_(r.name + buf);
}

namespace {

// A completed run's metrics.jsonl must end where its result.json says (a
// truncated, reordered or padded file gave other steps and losses, which
// were believed over study.json and result.json alike).
void check_metrics_match_result(const fs::path& dir, const StudyJson& oc) {
  const auto res = run_dir::read_result(dir);
  if (!res) return;
  for (const char* key : {"steps", "last_loss", "val_loss"}) {
    const nlohmann::json had = res->value(key, nlohmann::json()), got = nlohmann::json(oc.value(key, StudyJson()));
    if (had == got || (had.is_number() && got.is_number() && had.get<double>() == got.get<double>())) continue;
    throw Error((dir / run_dir::kMetrics).string() + " gives " + key + " " + got.dump() + " but " +
                (dir / run_dir::kResult).string() + " says " + had.dump() +
                " (damaged or edited?): remove the run's folder and rerun, the study trains the run again");
  }
}

// The fields of a run's record measured on its trained model, kept beside
// the run as well (measures.json): study.json alone was trusted, and an
// edited fluency score moved the fluency verdict.
constexpr const char* kMeasuresFile = "measures.json";
constexpr const char* kMeasured[] = {"symmetry", "sample", "fluency", "translation", "note"};
constexpr const char* kResidualFile = "residual_stream.json";

void keep_measures(const fs::path& dir, const StudyJson& rec) {
  StudyJson m = StudyJson::object();
  for (const char* k : kMeasured)
    if (rec.contains(k)) m[k] = rec[k];
  write_file_atomic(dir / kMeasuresFile, m.dump(2) + "\n");
}

// As study.json holds it: an infinite or NaN number is written as null,
// and key order is not meaning (a tool may sort the keys).
nlohmann::json as_saved(const StudyJson& j) { return nlohmann::json::parse(j.dump()); }

// The copy kept in `file`, nullopt without one; an unreadable one is a
// difference (the run is measured again, which writes it anew).
std::optional<nlohmann::json> kept_copy(const fs::path& file, bool& unreadable) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(file, ec))) return std::nullopt;
  auto j = fs::is_regular_file(fs::symlink_status(file, ec)) ? read_json_if_exists(file) : std::nullopt;
  unreadable = unreadable || !j;
  return j;
}

// A committed study's run keeps its result.json beside the packed metrics:
// its recorded outcome must end where the result says.
void check_outcome_against_result(const fs::path& dir, const StudyJson& recorded) {
  const auto res = run_dir::read_result(dir);
  if (!res || !res->is_object() || recorded.value("status", "") != "completed") return;
  for (const char* key : {"steps", "last_loss", "val_loss"}) {
    const nlohmann::json had = as_saved(recorded.value(key, StudyJson())), says = res->value(key, nlohmann::json());
    if (had == says || (had.is_number() && says.is_number() && had.get<double>() == says.get<double>())) continue;
    throw Error(std::string(kStudyFile) + ": field 'outcome." + key + "' of run '" + dir.filename().string() + "' is " +
                had.dump() + " but " + (dir / run_dir::kResult).string() + " says " + says.dump() +
                " (edited?): restore study.json");
  }
}

}  // namespace

StudyJson FinishedRunAnalysis::outcome(const RunSpec& r, const std::string& status) const {
  const fs::path dir = out_ / "runs" / r.name;
  check_folder_config(dir, planned_run_config(to_json(r.train), out_));
  StudyJson oc = outcome_from_metrics(dir, status);
  if (status == "completed") check_metrics_match_result(dir, oc);
  // result.json's status must be what the metrics show: a "completed" edited
  // to "diverged" was kept, and counted, as a divergence.
  const bool diverged_row = oc.contains("diverged_at");
  check(diverged_row == (status == "diverged"),
        (dir / run_dir::kResult).string() + ": field 'status' is \"" + status + "\" but " +
            (dir / run_dir::kMetrics).string() + (diverged_row ? " records a divergence" : " records none") +
            " (edited or damaged?): remove result.json and rerun, the run resumes from its checkpoint");
  // The checkpoint records the sha256 of the metrics it saw: a loss
  // rewritten to the same length passed the checks above.
  check(!run_dir::has_checkpoint(dir) || run_dir::metrics_as_saved(dir, run_dir::read_state(dir)),
        (dir / run_dir::kMetrics).string() + ": its first bytes are not the ones its checkpoint recorded " +
            "(state.json's metrics_sha256 differs: a row edited?): restore it, or remove the run's folder and " +
            "rerun, the study trains the run again");
  oc.update(StudyJson(spikes_from_metrics(dir, r.train.max_loss)));
  oc["max_loss"] = r.train.max_loss;
  oc["max_loss_window"] = r.train.max_loss_window;
  // Trained: completed, and learned more than token frequencies.
  // (Translation runs have their own data: BLEU says whether they learned.)
  oc["trains"] = status == "completed" && oc.contains("val_loss") &&
                 (r.preset == "translation" || oc["val_loss"].get<double>() < plateau_limit());
  return oc;
}

std::optional<StudyJson> FinishedRunAnalysis::outcome_if_changed(const RunSpec& r, const std::string& status,
                                                                 const StudyJson& recorded) const {
  // A committed study keeps its metrics packed only: study.json is its record.
  std::error_code ec;
  const fs::path metrics = out_ / "runs" / r.name / run_dir::kMetrics;
  if (!fs::is_regular_file(metrics, ec) && fs::exists(metrics.string() + ".gz", ec)) {
    check_outcome_against_result(out_ / "runs" / r.name, recorded);
    return std::nullopt;
  }
  StudyJson now = outcome(r, status);
  // Compared as study.json holds them: an infinite perplexity is written as
  // null, and key order is not meaning (a tool may sort the keys).
  if (as_saved(now) == as_saved(recorded)) return std::nullopt;
  return now;
}

bool FinishedRunAnalysis::measures_differ(const RunSpec& r, const StudyJson& recorded) const {
  const fs::path dir = out_ / "runs" / r.name;
  // A folder as the run left it (a committed one keeps only its result and
  // packed metrics, and study.json is its record) must keep the copies.
  std::error_code ec;
  const bool live = fs::exists(dir / run_dir::kConfig, ec);
  bool unreadable = false;
  if (const auto m = kept_copy(dir / kMeasuresFile, unreadable)) {
    if (!m->is_object()) return true;
    for (const char* k : kMeasured)
      if (m->contains(k) != recorded.contains(k) || (m->contains(k) && (*m)[k] != as_saved(recorded[k]))) return true;
  } else if (live && std::any_of(std::begin(kMeasured), std::end(kMeasured),
                                 [&](const char* k) { return recorded.contains(k); })) {
    return true;
  }
  if (r.preset == "atlas" && recorded.contains("residual_stream")) {
    const auto rs = kept_copy(dir / kResidualFile, unreadable);
    if (rs ? *rs != as_saved(recorded["residual_stream"]) : live) return true;
  }
  return unreadable;
}

FinishedRunAnalysis::Reread FinishedRunAnalysis::reread(const RunSpec& r, const std::string& status,
                                                        const StudyJson& recorded) const {
  // Lacking its analysis (a crash between the run and study.json): redone,
  // it is deterministic and cheap. A finished status that is not the
  // run's, or one without its outcome, no crash leaves.
  const std::string had = recorded.contains("status") && recorded["status"].is_string()
                              ? recorded["status"].get<std::string>()
                              : std::string();
  if (had != status || !recorded.contains("outcome")) {
    std::string note;
    if (had == status) note = " (its record in study.json had no outcome, edited?: analysed again)";
    if (had != status && (had == "completed" || had == "diverged"))
      note = " (study.json said " + had + " where its result.json says " + status + ", edited?: analysed again)";
    return {analyse(r, status), note};
  }
  if (measures_differ(r, recorded))
    return {analyse(r, status),
            " (its measures in study.json (sample, fluency, symmetry, scores, residual stream) were not the copies "
            "beside the run, edited?: measured again)"};
  if (auto oc = outcome_if_changed(r, status, recorded["outcome"]))
    return {StudyJson{{"outcome", *oc}},
            " (its outcome in study.json was not its metrics.jsonl's, edited?: taken from the metrics)"};
  return {StudyJson::object(), ""};
}

// Outcome, hidden-unit symmetry and text sample of a finished run.
// Computed apart from study.json (without mutex_): the fields to set in
// the run's record.
StudyJson FinishedRunAnalysis::analyse(const RunSpec& r, const std::string& status) const {
  StudyJson rec = measure(r, status);
  if (rec.contains("sample")) keep_measures(out_ / "runs" / r.name, rec);  // every run but an edge probe
  return rec;
}

StudyJson FinishedRunAnalysis::measure(const RunSpec& r, const std::string& status) const {
  StudyJson rec = StudyJson::object();
  const fs::path dir = out_ / "runs" / r.name;
  rec["status"] = status;
  rec["outcome"] = outcome(r, status);
  // Stability-edge probes: many short runs, whose samples would say nothing.
  if (r.preset == "lr-edge" || r.variables.value("arm", "") == "edge") return rec;
  std::error_code ec;
  const fs::path ckpt = dir / run_dir::kCheckpoint;
  if (!fs::exists(ckpt / kConfigFile, ec)) {
    rec["sample"] = nullptr;
    rec["note"] = "no checkpoint (the run diverged before its first save)";
    if (r.preset == "atlas") rec["residual_stream"] = residual_record(r, nullptr, dir);
    return rec;
  }
  if (const auto step = run_dir::checkpoint_step(dir)) rec["checkpoint_step"] = *step;
  // An edited checkpoint config (another placement) loaded and was sampled
  // as if it were the planned model.
  check_checkpoint_model(ckpt, r.train.model, "study run '" + r.name + "': ", "the study planned");
  GPT2<float> model = load_model(ckpt);
  if (r.preset == "atlas") rec["residual_stream"] = residual_record(r, &model, dir);
  const int L = model.config().n_layer;
  StudyJson sym = StudyJson::array();
  sym.push_back(StudyJson(to_json(hidden_unit_spread(model, 0))));
  if (L > 1) sym.push_back(StudyJson(to_json(hidden_unit_spread(model, L - 1))));
  rec["symmetry"] = sym;
  if (r.preset == "translation") {  // its own tokenizer and task: scored, not sampled
    rec["sample"] = nullptr;
    if (status == "completed") translation_scores(r, rec, ckpt);
    return rec;
  }
  if (tokenizer_) {
    const TextSample s = draw_sample(model, *tokenizer_, budget_.sample_prompt, budget_.sample_tokens,
                                     budget_.sample_temperature, budget_.sample_top_k, budget_.seeds.front());
    rec["sample"] = to_json(s);
    if (budget_.fluency_samples > 0) rec["fluency"] = fluency_samples(model);
  } else {
    rec["sample"] = nullptr;
    rec["note"] = "no tokenizer for this dataset, so no text sample";
  }
  return rec;
}

// The fluency samples: fixed prompts and seeds, so that two runs are judged
// on the same openings; each scored by the judge (NLL of the continuation
// under the training split's trigram model) and for repetition.
StudyJson FinishedRunAnalysis::fluency_samples(const GPT2<float>& model) const {
  StudyJson all = StudyJson::array();
  const auto& prompts = fluency_prompts();
  double nll = 0, rep = 0;
  int judged = 0;
  for (int i = 0; i < budget_.fluency_samples; ++i) {
    TextSample s =
        draw_sample(model, *tokenizer_, prompts[static_cast<size_t>(i) % prompts.size()], budget_.fluency_tokens,
                    budget_.sample_temperature, budget_.sample_top_k, budget_.seeds.front() + static_cast<uint64_t>(i));
    StudyJson j = StudyJson(to_json(s));
    rep += s.quality.repeated_4gram_rate;
    if (judge_ && !s.generated.empty()) {
      std::vector<int> ids = s.context;
      ids.insert(ids.end(), s.generated.begin(), s.generated.end());
      j["judge_nll"] = judge_->nll(ids, s.context.size());
      nll += j["judge_nll"].get<double>();
      ++judged;
    }
    all.push_back(std::move(j));
  }
  StudyJson f = {{"samples", all}, {"tokens", budget_.fluency_tokens}};
  if (budget_.fluency_samples > 0) f["rep4_mean"] = rep / budget_.fluency_samples;
  if (judged > 0) f["judge_nll_mean"] = nll / judged;
  return f;
}

// An atlas run's residual stream at init (its own seed's weights) and at
// its end (`trained`, the last checkpoint; null when there is none), on the
// same validation batches; also kept next to the run.
StudyJson FinishedRunAnalysis::residual_record(const RunSpec& r, GPT2<float>* trained, const fs::path& dir) const {
  const int B = r.train.batch_size, T = r.train.seq_len, n = budget_.atlas.residual_batches;
  GPT2<float> fresh(r.train.model);
  fresh.init_weights(r.train.seed);
  StudyJson j = {{"batches", n}, {"batch_size", B}, {"seq_len", T}};
  j["init"] = to_json(measure_residual_stream(fresh, data_.dir, B, T, n));
  j["final"] = trained ? StudyJson(to_json(measure_residual_stream(*trained, data_.dir, B, T, n))) : StudyJson(nullptr);
  if (const auto step = run_dir::checkpoint_step(dir); step && trained) j["final_step"] = *step;
  write_file_atomic(dir / kResidualFile, j.dump(2) + "\n");
  return j;
}

void set_analysis(StudyJson& rec, const StudyJson& fields) {
  if (fields.contains("status"))
    for (const char* k :
         {"outcome", "note", "sample", "symmetry", "fluency", "translation", "residual_stream", "checkpoint_step"})
      rec.erase(k);
  rec.update(fields);
}

std::pair<std::string, bool> run_state(const fs::path& dir) {
  std::error_code ec;
  auto res = run_dir::read_result(dir);
  if (res && res->is_object() && res->contains("status")) {
    const auto& st = (*res)["status"];
    const std::string status = st.is_string() ? st.get<std::string>() : "";
    // "bogus" or 5 once retrained the run from scratch, its checkpoint lost.
    check(status == "completed" || status == "diverged" || status == "interrupted",
          (dir / run_dir::kResult).string() + ": field 'status' is " + st.dump() + ", not one gpt2lab writes " +
              "(edited or damaged?): remove result.json and rerun, the run resumes from its checkpoint");
    if (status == "interrupted" && !fs::exists(dir / run_dir::kConfig, ec)) {
      // An interrupted run as a commit keeps it (docs/study/v3): its
      // result and packed metrics without the checkpoint to resume from.
      // It starts again; those two files are the study's own.
      for (const char* f : {run_dir::kResult, "metrics.jsonl.gz"}) fs::remove(dir / f, ec);
      return {"", false};
    }
    return {status, status == "interrupted"};
  }
  // Crashed mid-run (or a result without a status): its last checkpoint
  // (if any) carries on.
  return {"", fs::exists(dir / run_dir::kConfig, ec)};
}

}  // namespace gpt2lab

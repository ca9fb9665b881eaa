// What a study records of a finished training run, beyond its status: the
// outcome from its metrics (final losses, divergence, spikes, whether it
// left the unigram plateau), the symmetry of its hidden units, a fixed-seed
// text sample, the residual stream (atlas) and BLEU/chrF (translation).
// Deterministic and computed from what the run left on disk, so a study
// that finds a run finished but unrecorded (a crash between the two) can
// compute it again.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "study/budget.h"
#include "study/plan.h"
#include "study/study_file.h"

namespace gpt2lab {

// What is on disk for a training run: its result's status ("completed",
// "diverged", "interrupted"; "" without one) and whether to resume it. A
// result.json whose status gpt2lab does not write is refused, not retrained.
std::pair<std::string, bool> run_state(const fs::path& dir);

class NgramJudge;
class Tokenizer;
template <typename T>
class GPT2;
struct TranslationStudyData;

// Sets `fields` in a run's record; a whole analysis (it has "status")
// first drops what an earlier one set (a note "no checkpoint" outlived the
// checkpoint of the run trained again).
void set_analysis(StudyJson& rec, const StudyJson& fields);

class FinishedRunAnalysis {
 public:
  // Every pointer may be null where the study has no such data: no
  // tokenizer (no samples), no judge (samples without its score), no
  // translation data (no translation runs), no unigram baseline (the
  // uniform loss stands for it).
  FinishedRunAnalysis(fs::path out, const Budget& budget, const StudyData& data, const Tokenizer* tokenizer,
                      const NgramJudge* judge, const TranslationStudyData* mt, std::optional<double> unigram,
                      std::function<void(const std::string&)> log);

  // The fields to set in the run's record ("status", "outcome", "sample",
  // ...). Run apart from study.json, without the study's lock.
  StudyJson analyse(const RunSpec& r, const std::string& status) const;

  // What a run found finished keeps of its record in study.json, read
  // back from its folder: `fields` to set in the record (empty where it
  // stands) and `note`, what was edited, for the log. An outcome other than
  // its metrics give is taken from the metrics (an edited one moved an lr
  // edge or a selection); measures of the trained model (sample, fluency,
  // symmetry, residual stream) other than the copies kept beside the run
  // are measured again. A committed study keeps its metrics packed and no
  // copies: study.json is all there is, and it stands.
  struct Reread {
    StudyJson fields;
    std::string note;
  };
  Reread reread(const RunSpec& r, const std::string& status, const StudyJson& recorded) const;

  // A final val loss at or above this has not left the unigram plateau.
  double plateau_limit() const;

 private:
  StudyJson measure(const RunSpec& r, const std::string& status) const;
  StudyJson outcome(const RunSpec& r, const std::string& status) const;
  std::optional<StudyJson> outcome_if_changed(const RunSpec& r, const std::string& status,
                                              const StudyJson& recorded) const;
  bool measures_differ(const RunSpec& r, const StudyJson& recorded) const;
  void translation_scores(const RunSpec& r, StudyJson& rec, const fs::path& ckpt) const;
  StudyJson fluency_samples(const GPT2<float>& model) const;
  StudyJson residual_record(const RunSpec& r, GPT2<float>* trained, const fs::path& dir) const;

  fs::path out_;
  const Budget& budget_;
  const StudyData& data_;
  const Tokenizer* tokenizer_;
  const NgramJudge* judge_;
  const TranslationStudyData* mt_;
  std::optional<double> unigram_;
  std::function<void(const std::string&)> log_;
};

}  // namespace gpt2lab

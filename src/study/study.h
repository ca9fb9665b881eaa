// A study: the grid of runs of one or more presets, executed one after
// another into OUT, recorded in OUT/study.json, then drawn into a report.
//
//   OUT/study.json       every run's config, what it varies, and its outcome
//                        (rewritten atomically after each run)
//   OUT/runs/<name>/     a training run directory (see train/trainer.h), or
//                        grad_at_init.json for a grad-at-init model
//   OUT/data/            the study's own BPE + shards (see dataset.h)
//   OUT/report.md, .html written by tools/report
//
// Resumable: a run whose result is on disk (result.json completed/diverged,
// grad_at_init.json) is not redone; an interrupted or crashed training run
// is resumed from its checkpoint (bit-identically, as the trainer does).
// SIGINT/SIGTERM during a training run finish its step, save, and end the
// study; rerunning the same command carries on.
//
// jobs > 1 runs that many independent items at once on threads of this
// process, each run with threads_per_job(threads, jobs) threads (jobs.h);
// a fine-tuning still waits for its pre-training run, and the probes of one
// lr-edge search still run in order. A run's numbers depend on its own
// thread count (float sums in another order), never on how many ran beside
// it: --jobs 2 --threads 2 gives the runs of --jobs 1 --threads 1 bit for bit.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gpt2lab {

namespace fs = std::filesystem;

struct StudyOptions {
  std::vector<std::string> presets;  // from parse_presets
  std::string budget = "quick";
  fs::path data;  // text corpus or prepared dataset
  // translation preset: gettext catalogs (folders or files; see
  // translation/dataset.h), default data/catalogs.
  std::vector<fs::path> catalogs;
  fs::path out;
  int threads = 0;                              // for the whole study; 0: every core
  int jobs = 1;                                 // items run at once
  bool bf16 = false;                            // every run's matmuls in bf16 (Budget::bf16)
  int seeds = 0;                                // every preset at this many seeds; 0: each its own
  bool report = true;                           // run tools/report at the end
  bool quiet = false;                           // no per-step training output (always so with jobs > 1)
  std::string command;                          // the command line, recorded in study.json
  std::function<void(const std::string&)> log;  // progress lines
};

struct StudySummary {
  int planned = 0;
  int already_done = 0;  // found finished on disk
  int ran = 0;           // trained or measured now
  int diverged = 0;      // among all planned training runs
  bool interrupted = false;
  bool report_written = false;
  std::string report_message;  // why not, when not
};

StudySummary run_study(const StudyOptions& options);

// Runs the report script on OUT (python3 tools/report OUT). Returns true
// on success; otherwise *message says why (e.g. matplotlib is missing).
bool run_report(const fs::path& out, std::string* message);

}  // namespace gpt2lab

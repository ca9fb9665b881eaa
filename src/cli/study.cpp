// gpt2lab study: the built-in Pre-LN/Post-LN and init-scheme studies.
#include <cstdio>

#include "cli/command.h"
#include "core/data_dir.h"
#include "data/prepare.h"
#include "gpt2lab/core/error.h"
#include "study/budget.h"
#include "study/plan.h"
#include "study/study.h"

namespace gpt2lab::cli::study_command {
namespace {

std::string catalogs_flags(const std::vector<std::string>& catalogs) {
  std::string s;
  for (const auto& c : catalogs) s += " --catalogs " + c;
  return s;
}

void add(CLI::App& app) {
  struct Flags {
    std::string preset = "all", budget = "quick", data, out;
    std::vector<std::string> catalogs;
    int threads = 0, jobs = 1, seeds = 0;
    bool no_report = false, quiet = false, bf16 = false;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = app.add_subcommand("study",
                                 "Run a reproducible study (Pre-LN vs Post-LN, learning-rate edge, warmup, init "
                                 "schemes, depth; every setting at several seeds) and draw its report");
  std::string presets_help;
  for (const PresetInfo& p : study_presets())
    presets_help += std::string(p.name) + " (" + p.summary + (p.in_all ? "; in all" : "") + "), ";
  sub->add_option("--preset", f->preset, presets_help + "all, or a comma-separated list")->capture_default_str();
  sub->add_option("--data", f->data,
                  "A folder of text files (the study trains its own BPE on it, cached in OUT/data) or a prepared "
                  "dataset (train.bin/val.bin); default: the State of the Union corpus, " +
                      default_corpus_dir().string());
  sub->add_option("--catalogs", f->catalogs,
                  "translation: gettext catalog folders or files (default: " +
                      (data_directory() / "catalogs").string() + ", filled by scripts/fetch_translation.sh)");
  sub->add_option("--out", f->out, "Study folder: study.json, runs/, report.md, report.html")->required();
  // tiny is for the tests: every preset and figure in seconds, numbers meaningless.
  sub->add_option("--budget", f->budget,
                  "quick (every preset reduced, about ten minutes on 2 cores) or full (about an hour)")
      ->check(CLI::IsMember({"quick", "full", "tiny"}))
      ->capture_default_str();
  sub->add_flag("--no-report", f->no_report, "Do not run tools/report at the end");
  sub->add_flag("--bf16", f->bf16,
                "Every run's matmuls with bf16 inputs and fp32 accumulation (AVX512-BF16; fp32 weights, gradients "
                "and AdamW), as train --bf16; a study folder holds one precision; the report marks each verdict "
                "resting on a preset whose bf16 control did not pass (docs/study/README.md)");
  sub->add_option("--seeds", f->seeds,
                  "Every preset at this many seeds (default: each preset's own, 3 to 10), the budget's seeds "
                  "continued; more seeds on a finished study add runs and keep the ones done")
      ->check(CLI::Range(kMinSeedCount, kMaxSeedCount));
  sub->add_flag("--quiet", f->quiet, "No per-step training output (the study's own lines remain)");
  add_threads_flag(sub, f->threads);
  sub->add_option("--jobs", f->jobs,
                  "Runs at once (threads of this process), each on max(1, threads / jobs) threads; no per-step "
                  "output when above 1. A run's numbers depend on its own thread count, not on --jobs")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->footer(
      "\nFinished runs are kept: rerunning the same command skips them and resumes an interrupted one.\n"
      "SIGINT/SIGTERM finish the current training step (of every run in progress), save, and stop the study.\n"
      "--jobs 2 --threads 2 gives the same runs, bit for bit, as --jobs 1 --threads 1 (1 thread per run).\n"
      "The report (OUT/report.md, OUT/report.html) needs /usr/bin/python3 with matplotlib.");
  sub->callback([f] {
    StudyOptions o;
    o.presets = parse_presets(f->preset);
    o.budget = f->budget;
    o.data = f->data.empty() ? default_corpus_dir() : fs::path(f->data);
    o.out = f->out;
    if (f->catalogs.empty())
      o.catalogs = {data_directory() / "catalogs"};
    else
      o.catalogs.assign(f->catalogs.begin(), f->catalogs.end());
    o.threads = f->threads;
    o.jobs = f->jobs;
    o.bf16 = f->bf16;
    o.seeds = f->seeds;
    o.report = !f->no_report;
    o.quiet = f->quiet;
    o.command = "gpt2lab study --preset " + f->preset + " --budget " + f->budget +
                (f->data.empty() ? "" : " --data " + f->data) + catalogs_flags(f->catalogs) + " --out " + f->out +
                (f->threads ? " --threads " + std::to_string(f->threads) : "") +
                (f->jobs != 1 ? " --jobs " + std::to_string(f->jobs) : "") +
                (f->seeds ? " --seeds " + std::to_string(f->seeds) : "") + (f->bf16 ? " --bf16" : "");
    o.log = [](const std::string& line) {
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    };
    const StudySummary s = run_study(o);
    if (!s.interrupted && o.report && !s.report_written) throw Error("report not written: " + s.report_message);
  });
}

GPT2LAB_COMMAND(50, add);

}  // namespace
}  // namespace gpt2lab::cli::study_command

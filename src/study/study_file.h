// OUT/study.json, the study's record: every run's config, what it varies
// and its outcome, every lr-edge search and its probes. A study reads it
// back on every rerun (that is how it resumes), so what is read is
// validated, and it is rewritten atomically after each run. The functions
// here only read and edit the JSON; the caller (study.cpp) holds the lock
// that serialises the workers around them.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json.h"

#include "study/budget.h"

namespace gpt2lab {

namespace fs = std::filesystem;

using StudyJson = nlohmann::ordered_json;

inline constexpr const char* kStudyFile = "study.json";
// 2: seeds, lr-edge searches, recovery-aware divergence; runs of version 1
// have other names and settings and do not mix with them.
inline constexpr int kStudyVersion = 2;
// study.json holds a record per run (v3: 13.7 MB for 1,553 runs and 39
// searches, ~9.6 KB per run planned at the start), read whole on every
// rerun: the cap bounds what a damaged one makes us allocate, and
// check_study_size keeps a plan (--seeds up to 1000) within it.
inline constexpr size_t kMaxStudyFileBytes = size_t{256} << 20;

// Refuses a plan of `planned` runs and searches whose records could pass
// kMaxStudyFileBytes (32 KiB each, second stages included), before any runs.
void check_study_size(size_t planned);

// Refuses an --out that is neither missing, empty, a study, nor what a
// study killed before its study.json leaves (runs/ and its own data/), so
// that a report never overwrites a file of the user's.
void check_study_folder(const fs::path& out);

// A rerun rewrites a found run's preset and variables from its plan: " (...
// edited?: restored)" when its record said another preset, a variable of
// another value, or (status, where given) another status, else "". A
// variable the record lacks is not counted (an older gpt2lab's).
std::string plan_differs_note(const StudyJson& rec, const std::string& preset, const nlohmann::json& variables,
                              const char* status = nullptr);

// The parsed JSON file, or nullopt when it is missing or unreadable (torn
// by a crash mid-write elsewhere: the caller redoes what it held).
std::optional<nlohmann::json> read_json_if_exists(const fs::path& p, size_t max_bytes = kMaxJsonFileBytes);

// An edited or damaged study.json is an Error naming the field.
void validate_study_file(const nlohmann::json& j, const fs::path& p);

// Before any data work: a study.json of another format version, budget,
// precision or seed count (Budget::seed_count) in OUT is refused (runs of
// different sizes do not mix).
void check_study_compatible(const fs::path& out, const Budget& b);

// OUT/study.json as it is, or a new record; refuses one of another budget
// or on other data (tokenizer identity).
StudyJson open_study_file(const fs::path& out, const std::string& budget, const std::string& tokenizer_identity);

// Stamps "updated" and writes the file atomically.
void save_study_file(const fs::path& out, StudyJson& study);

// The record of the run named `name`, added when missing. The reference
// lasts only until the next record is added.
StudyJson& run_record(StudyJson& study, const std::string& name);

// A probe's outcome: true trained, false did not (diverged, or stayed on the
// unigram plateau), nullopt not run yet.
std::optional<bool> probe_outcome(const StudyJson& study, const std::string& run);

// Puts an lr-edge search's record in "edges", replacing the one of its name.
void put_edge_record(StudyJson& study, StudyJson rec);

// Runs and searches in plan order (`items`: the planned names; an edge
// search's probes follow it, in search order) whatever the order in which
// --jobs workers reached them; records of items not planned now first, as
// they were.
void order_records(StudyJson& study, const std::vector<std::string>& items);

// A path inside the study folder `out`, relative to it (study.json is
// committed and read in clones elsewhere, so it names no path of this
// machine); a path outside it stays as it is.
std::string path_in_study(const fs::path& out, const std::string& path);

// A training run's config as study.json records it: without its folder and
// thread count, its paths relative to the study folder.
StudyJson planned_run_config(const nlohmann::json& train_options, const fs::path& out);

// The translation data's summary as study.json records it: its folders
// relative to the study folder (they are inside it).
StudyJson translation_data_record(const nlohmann::json& summary, const fs::path& out);

// Records of an older gpt2lab named their data paths absolute.
void relative_run_paths(StudyJson& study, const fs::path& out);

// A run recorded under other settings than `planned` (the budget changed
// between two sessions of one study) is an Error naming the fields: kept
// or resumed, its numbers would be reported under the new settings. Paths
// are not compared, so that a study carries on in a clone elsewhere.
void check_recorded_config(const StudyJson& study, const std::string& name, const StudyJson& planned,
                           const fs::path& file);

// Removes the study.json.tmp-* files a killed study left in `out`: regular
// files only (a link or folder of that name is not ours to delete).
void remove_study_temp_files(const fs::path& out);

// A finished run's own config.json (the trainer's) must hold `planned`
// (paths aside): a folder copied or moved from another run, or edited,
// would have its numbers reported as this run's. Error naming the field;
// nothing to check where the folder keeps no config.json (a committed
// study).
void check_folder_config(const fs::path& run_dir, const StudyJson& planned);

// The report's verdict rules (`python3 tools/report --rules FILE`), put in
// a new study's study.json before any run, so that a rule changed after the
// runs is reported beside the registered one. Where the tool cannot run,
// "rules" is null with a note (the report then says the rules were not
// registered). Returns what to log, or "" when registered or already there.
std::string register_rules(const fs::path& out, StudyJson& study);

// "2026-12-03T14:00:00Z"
std::string now_utc();

}  // namespace gpt2lab

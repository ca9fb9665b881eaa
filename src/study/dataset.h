// The dataset a study trains on.
//
// --data may name a prepared dataset (train*.bin / val*.bin, as `gpt2lab
// prepare` writes) or a folder of text files. Text is the default and the
// better choice: the study then trains its own byte-level BPE of the
// budget's vocabulary size (4096 for `full`) on that corpus and prepares the
// shards with it, cached under OUT/data. Why not GPT-2's tokenizer: with
// 50257 tokens the tied LM head would hold most of a small study model's
// parameters and most of its compute (at n_embd 128: 6.4M head parameters
// against 1.2M in six blocks), so the runs would measure the head, not the
// Pre-LN/Post-LN and init effects in the blocks.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/plan.h"

namespace gpt2lab {

namespace fs = std::filesystem;

// A study's data cache is complete when its source.json (written last) is
// there: true when it records `source`, false when there is none yet; an
// Error when it records other data (`what` names it: "another corpus or
// vocabulary"), since the cache of one study folder is not redone silently.
bool cache_holds(const fs::path& source_file, const nlohmann::json& source, const std::string& what);

// The sha256 of every file under a cache's parts (its subfolders), kept in
// its files.json when it is built and checked at each start: an Error
// names a file edited, added or deleted since. A cache without the record
// (older, or the record deleted) is built again by its owner.
bool cache_digests_kept(const fs::path& cache);
void keep_cache_digests(const fs::path& cache, const std::vector<std::string>& parts);
void check_cache_digests(const fs::path& cache, const std::vector<std::string>& parts);

// out_data: the cache folder (OUT/data). Throws Error when --data is missing
// or when out_data was prepared from another corpus or vocabulary size.
StudyData ensure_study_data(const fs::path& data, const fs::path& out_data, int vocab_size, int threads,
                            const std::function<void(const std::string&)>& log);

}  // namespace gpt2lab

// The documents a corpus is made of: text files, or folders of them.
#pragma once

#include <filesystem>
#include <vector>

namespace gpt2lab {

// Every document the inputs name (files, or folders searched recursively,
// hidden entries skipped), sorted by path; throws Error on a missing input.
std::vector<std::filesystem::path> list_documents(const std::vector<std::filesystem::path>& inputs);

}  // namespace gpt2lab

// The documents a corpus is made of: text files, or folders of them.
#pragma once

#include <filesystem>
#include <vector>

namespace gpt2lab {

// Every document the inputs name (files, or folders searched recursively,
// hidden entries skipped), sorted by path; throws Error on a missing input.
std::vector<std::filesystem::path> list_documents(const std::vector<std::filesystem::path>& inputs);

// An output folder equal to, inside or around an input would read its own
// earlier output as documents on a rerun (or replace the input): Error.
void check_output_apart(const std::filesystem::path& out, const std::vector<std::filesystem::path>& inputs);

}  // namespace gpt2lab

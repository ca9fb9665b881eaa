// Fuzzes llm.c token shards: TokenShard::open (magic, version, count against
// the file size) and the DataLoader that cuts the shard into batch windows,
// with B and T taken from the input's last two bytes. Every token of every
// accepted shard is read, so a count that passed validation but runs past
// the mapping is caught by ASan.
#include <cstdint>
#include <vector>

#include "data/token_shard.h"
#include "fuzz_util.h"
#include "gpt2lab/core/error.h"
#include "train/dataloader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpt2lab;
  int B = 1, T = 1;
  if (size >= 2) {
    B = 1 + data[size - 2] % 4;
    T = 1 + data[size - 1] % 16;
  }
  const auto path = fuzz::put_file("shards/train.bin", {reinterpret_cast<const char*>(data), size});
  try {
    TokenShard s = TokenShard::open(path);
    uint64_t sum = 0;
    for (uint16_t t : s.tokens()) sum += t;
    if (s.size() * 2 + kShardHeaderBytes != size) __builtin_trap();
    DataLoader loader(find_split_files(path.parent_path(), "train"), B, T, (size & 1) != 0, sum);
    std::vector<int> in(static_cast<size_t>(B) * T), tg(in.size());
    for (int i = 0; i < 3; ++i) loader.next_batch(in.data(), tg.data());
    if (loader.max_token() > 65535) __builtin_trap();
  } catch (const Error&) {
  }
  return 0;
}

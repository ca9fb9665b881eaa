// A small, fully specified random number generator (xoshiro256**, seeded by
// splitmix64). std::normal_distribution differs between standard libraries;
// ours gives the same numbers on every platform, which reproducible studies
// and bit-identical resumes need. The whole state is four words, so it is
// trivially checkpointed.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace gpt2lab {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0, uint64_t stream = 0) { reseed(seed, stream); }

  void reseed(uint64_t seed, uint64_t stream = 0) {
    uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (stream + 1));
    for (auto& s : state_) s = splitmix64(x);
    has_spare_ = false;
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  // Uniform integer in [0, n), unbiased (Lemire's multiply-shift + rejection).
  uint64_t below(uint64_t n) {
    if (n == 0) return 0;
    uint64_t threshold = (0 - n) % n;
    for (;;) {
      unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * n;
      if (static_cast<uint64_t>(m) >= threshold) return static_cast<uint64_t>(m >> 64);
    }
  }

  // Standard normal via Box-Muller (both values used).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    double r = std::sqrt(-2.0 * std::log(u1));
    double theta = 2.0 * 3.14159265358979323846 * u2;
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }

  struct State {
    std::array<uint64_t, 4> s;
    double spare;
    bool has_spare;
  };
  State state() const { return {state_, spare_, has_spare_}; }
  void set_state(const State& st) {
    state_ = st.s;
    spare_ = st.spare;
    has_spare_ = st.has_spare;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  std::array<uint64_t, 4> state_{};
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace gpt2lab

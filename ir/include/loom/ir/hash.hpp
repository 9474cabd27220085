// A small, deterministic 64-bit hash for in-memory keys (intern table, kernel cache). Same value on every
// compiler and run, unlike std::hash. Not cryptographic: disk keys use a strong hash of their own.
#pragma once

#include <cstdint>
#include <string_view>

namespace loom {

class Hasher {
  public:
    void add(std::uint64_t v) {
        // Mixing step of splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number generators").
        state_ ^= v + 0x9e3779b97f4a7c15ull + (state_ << 6) + (state_ >> 2);
        state_ = mix(state_);
    }
    void add(std::string_view s) {
        add(s.size());
        std::uint64_t w = 0;
        int n = 0;
        for (unsigned char c : s) {
            w = (w << 8) | c;
            if (++n == 8) {
                add(w);
                w = 0;
                n = 0;
            }
        }
        add(w);
    }
    std::uint64_t digest() const { return mix(state_ ^ 0x2545f4914f6cdd1dull); }

  private:
    static std::uint64_t mix(std::uint64_t z) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    std::uint64_t state_ = 0x6a09e667f3bcc908ull;
};

}  // namespace loom

#pragma once
// What a relay (proxy/relay.cpp) borrows only while bytes are in flight: a buffer for a
// copied step, and for a bulk direction a pipe for splice(2). Both come from pools kept per
// thread and go back empty, so an idle relayed connection holds neither.
#include <array>
#include <cstddef>
#include <memory>
#include <vector>

namespace airlock::proxy::relay_spares {

constexpr std::size_t copy_chunk = 16 * 1024;
// A pipe holds a page per slot: the default 16 slots moved 60 KiB a splice in a bulk run,
// 256 slots about 960 KiB, so a sixteenth of the calls (and of the waits between them) per
// byte. Pages are taken only while bytes sit in the pipe.
constexpr int pipe_bytes = 1024 * 1024;

// What a relay borrows only while bytes are in flight, kept per thread between uses (each
// loop runs on one thread): a connection holds one while it moves data, and it goes back
// empty.
template <typename T>
class spare_pool {
 public:
  std::unique_ptr<T> take() {
    if (idle_.empty()) return T::make();
    auto p = std::move(idle_.back());
    idle_.pop_back();
    return p;
  }
  void give_back(std::unique_ptr<T> p) {
    if (p && idle_.size() < max_idle) idle_.push_back(std::move(p));
  }

 private:
  static constexpr std::size_t max_idle = 64;
  std::vector<std::unique_ptr<T>> idle_;
};

template <typename T>
spare_pool<T>& spares() {
  thread_local spare_pool<T> pool;
  return pool;
}

struct pipe_pair {
  int read = -1;
  int write = -1;
  std::size_t capacity = 64 * 1024;  // the kernel's default, kept when it refuses more
  pipe_pair() = default;
  pipe_pair(const pipe_pair&) = delete;
  pipe_pair& operator=(const pipe_pair&) = delete;
  ~pipe_pair();
  // A new pipe of pipe_bytes (or the kernel's default), or none when airlock is out of
  // descriptors (the copy goes on).
  static std::unique_ptr<pipe_pair> make();
};

struct copy_buffer {
  std::array<std::byte, copy_chunk> bytes;
  static std::unique_ptr<copy_buffer> make() { return std::make_unique<copy_buffer>(); }
};

}  // namespace airlock::proxy::relay_spares

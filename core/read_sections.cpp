#include "core/read_sections.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace airlock::core {

namespace {

// One per thread that ever read: `count` is odd while the thread is inside a section.
struct slot {
  std::atomic<std::uint64_t> count{0};
  unsigned depth = 0;  // the thread's own: nested guards
};

struct slots {
  std::mutex mutex;  // taken once per thread (its first section, its exit) and by writers
  std::vector<slot*> all;
  static slots& instance() {
    static slots* s = new slots;  // never destroyed: threads may exit after static destructors
    return *s;
  }
};

struct registered {
  slot mine;
  registered() {
    auto& s = slots::instance();
    std::lock_guard lock(s.mutex);
    s.all.push_back(&mine);
  }
  ~registered() {
    auto& s = slots::instance();
    std::lock_guard lock(s.mutex);
    std::erase(s.all, &mine);
  }
};

slot& this_thread_slot() {
  thread_local registered r;
  return r.mine;
}

}  // namespace

read_sections::guard::guard() {
  auto& s = this_thread_slot();
  if (s.depth++ == 0) s.count.fetch_add(1, std::memory_order_seq_cst);  // odd: inside
}

read_sections::guard::~guard() {
  auto& s = this_thread_slot();
  if (--s.depth == 0) s.count.fetch_add(1, std::memory_order_release);  // even: out
}

void read_sections::wait_for_readers() {
  const slot* self = &this_thread_slot();
  auto& s = slots::instance();
  std::lock_guard lock(s.mutex);
  for (slot* other : s.all) {
    if (other == self) continue;
    const auto seen = other->count.load(std::memory_order_seq_cst);
    if (seen % 2 == 0) continue;  // outside: any section it opens later reads the new pointer
    // Inside since before: wait for that section to close (the count moves on).
    while (other->count.load(std::memory_order_acquire) == seen) std::this_thread::yield();
  }
}

}  // namespace airlock::core

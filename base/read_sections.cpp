#include "base/read_sections.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

namespace airlock::base {

namespace {

// One per thread that ever read: `count` is odd while the thread is inside a section.
// Linked into the list by its own pointers, so registering allocates nothing and cannot
// fail (a decision line's emit is noexcept).
struct slot {
  std::atomic<std::uint64_t> count{0};
  unsigned depth = 0;  // the thread's own: nested guards
  slot* prev = nullptr;
  slot* next = nullptr;
};

struct slots {
  std::mutex mutex;  // taken once per thread (its first section, its exit) and by writers
  slot* first = nullptr;
  static slots& instance() {
    static slots* s = new slots;  // never destroyed: threads may exit after static destructors
    return *s;
  }
};

struct registered {
  slot mine;
  registered() noexcept {
    auto& s = slots::instance();
    std::lock_guard lock(s.mutex);
    mine.next = s.first;
    if (s.first != nullptr) s.first->prev = &mine;
    s.first = &mine;
  }
  ~registered() {
    auto& s = slots::instance();
    std::lock_guard lock(s.mutex);
    (mine.prev != nullptr ? mine.prev->next : s.first) = mine.next;
    if (mine.next != nullptr) mine.next->prev = mine.prev;
  }
};

slot& this_thread_slot() noexcept {
  thread_local registered r;
  return r.mine;
}

}  // namespace

read_sections::guard::guard() noexcept {
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
  for (const slot* other = s.first; other != nullptr; other = other->next) {
    if (other == self) continue;
    const auto seen = other->count.load(std::memory_order_seq_cst);
    if (seen % 2 == 0) continue;  // outside: any section it opens later reads the new pointer
    // Inside since before: wait for that section to close (the count moves on).
    while (other->count.load(std::memory_order_acquire) == seen) std::this_thread::yield();
  }
}

}  // namespace airlock::base

#pragma once
// An immutable object replaced whole now and then (the policy snapshot, the registered
// sessions) and read once per connection or query on every event loop. A
// std::atomic<std::shared_ptr> alone would do, but libstdc++'s load() spins on a lock bit
// in the pointer for every read. Here each thread keeps the reference it last read with
// that publication's version: a read is an atomic load of the version and a reference
// count increment, and only a thread's first read after a publish loads the atomic pointer.
// The price: a thread keeps the last version it read alive until it reads again or exits.
#include <atomic>
#include <cstdint>
#include <memory>

namespace airlock::base {

template <typename T>
class published {
 public:
  explicit published(std::shared_ptr<const T> initial = nullptr) : value_(std::move(initial)) {}
  published(const published&) = delete;
  published& operator=(const published&) = delete;

  std::shared_ptr<const T> load() const noexcept {
    const auto v = version_.load(std::memory_order_acquire);
    auto& mine = kept_by_this_thread()[(reinterpret_cast<std::uintptr_t>(this) >> 4) % ways];
    if (mine.owner != this || mine.version != v) {
      mine.value = value_.load(std::memory_order_acquire);
      mine.owner = this;
      mine.version = v;
    }
    return mine.value;
  }

  void store(std::shared_ptr<const T> next) noexcept {
    value_.store(std::move(next), std::memory_order_release);
    version_.store(fresh_version(), std::memory_order_release);  // after the value: see load()
  }

 private:
  static constexpr std::size_t ways = 4;
  struct kept {
    const published* owner = nullptr;
    std::uint64_t version = 0;
    std::shared_ptr<const T> value;
  };
  static kept* kept_by_this_thread() {
    thread_local kept slots[ways];
    return slots;
  }
  // Unique over every published<T> of the process, so an object created where another was
  // destroyed can never match a thread's kept version of the old one.
  static std::uint64_t fresh_version() noexcept {
    static std::atomic<std::uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  std::atomic<std::shared_ptr<const T>> value_;
  std::atomic<std::uint64_t> version_{fresh_version()};
};

}  // namespace airlock::base

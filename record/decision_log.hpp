#pragma once
// The decision log writer: JSON Lines on its own thread behind a bounded queue, so the
// data path never waits on the disk. When the queue is full or the disk refuses a write,
// lines are counted, never silently lost: a `log_dropped` line reports them as soon as
// the sink accepts again.
//
// The queue is a lock-free stack of rendered lines: every event loop pushes onto it with
// one compare-and-swap, and the writer takes it whole, puts it back in order and writes
// it with one write(). A writer that found lines waits `linger` before it looks again,
// and nobody wakes it meanwhile (but a flush, a reopen, shutdown or a quarter-full
// queue): under load the data path makes no system call for its lines, and the writer one
// write per `linger`. The data path takes no lock either: a line that must wake the writer
// (the first after it went idle, or the one that fills a quarter of the queue) moves a
// futex word and wakes the writer's sleep on it, without the mutex a condition variable
// would need. The mutex is the writer's and the rare requests' (flush, reopen, shutdown).
#include "base/result.hpp"
#include "record/decision.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace airlock::record {

// The line that says `count` lines were lost: when, the schema, and how many.
std::string render_log_dropped_line(std::uint64_t count,
                                    std::chrono::system_clock::time_point ts = std::chrono::system_clock::now());

class decision_log final : public decision_sink {
 public:
  static constexpr std::size_t default_capacity = 65536;  // lines
  // Each look is a wake-up of the writer thread, which on a small shared machine costs more
  // than its write: 2 ms (500 looks a second under load) took about 8 % more proxy CPU per
  // new HTTPS connection than 20 ms (proxy/README.md). A line still reaches the disk within
  // 20 ms; a flush, a reopen and shutdown do not wait.
  static constexpr std::chrono::milliseconds linger{20};

  // Opens `path` for appending ("-" is stdout) and starts the writer thread.
  static base::result<std::unique_ptr<decision_log>> open(const std::string& path,
                                                          std::size_t capacity = default_capacity);
  ~decision_log() override;  // writes what is queued, then stops

  void emit(const decision_record& r) noexcept override;
  // Queues one rendered line; never blocks.
  void write(std::string line) noexcept;
  // Reopens the file on the writer thread (log rotation on SIGHUP).
  void reopen() noexcept;
  // Blocks until everything queued so far is written (tests, shutdown).
  void flush() noexcept;

  std::uint64_t dropped_total() const noexcept;
  std::size_t queue_depth() const noexcept;
  // False from a line the queue had no room for, or a write the sink refused, until a write
  // succeeds again (the lines of the refusals meanwhile are what retries it).
  bool recording() const noexcept override { return !unwritable_.load(std::memory_order_relaxed); }

 private:
  decision_log(std::string path, int fd, std::size_t capacity);
  void run();
  bool write_all(const std::string& data) noexcept;
  void add(std::string_view line) noexcept;

  const std::string path_;
  int fd_;
  const std::size_t capacity_;

  // A line in the queue: this header, then its bytes, in one allocation.
  struct queued {
    queued* next;
    std::size_t size;
    static queued* make(std::string_view line) noexcept;  // null when out of memory
    static void destroy(queued* q) noexcept;
    std::string_view line() const noexcept { return {reinterpret_cast<const char*>(this + 1), size}; }
  };
  // Takes every queued line, oldest first, into `batch`; returns how many.
  std::size_t take_queued(std::string& batch);
  void count_dropped(std::uint64_t lines) noexcept;

  // The queue, and what the data path reads and adds to without a lock.
  std::atomic<queued*> newest_{nullptr};
  std::atomic<std::size_t> pending_lines_{0};
  std::atomic<bool> writer_idle_{false};           // waiting without a deadline: the next line wakes it
  std::atomic<std::uint64_t> dropped_pending_{0};  // not yet reported by a log_dropped line
  std::atomic<std::uint64_t> dropped_total_{0};
  std::atomic<std::uint64_t> enqueued_{0};
  std::atomic<bool> unwritable_{false};

  // The writer's sleep: it waits for `wake_word_` to move (futex), and whoever wants it
  // awake moves it first (wake_writer).
  std::atomic<std::uint32_t> wake_word_{0};
  void wake_writer() noexcept;
  // Sleeps until wake_word_ is no longer `seen`, or `limit` passed (a limit of 0: none).
  void sleep_unless_moved(std::uint32_t seen, std::chrono::nanoseconds limit) noexcept;
  // The writer's every wait: sleeps until `done()` holds, or `until` passed (without one,
  // only `done` ends it). The word is read before each look at `done`, so a wake-up that
  // comes after the look has moved it and the sleep after the look returns at once.
  template <typename Done>
  void sleep_until(Done done, std::optional<std::chrono::steady_clock::time_point> until = std::nullopt);
  // Whether a flush, reopen or shutdown asks the writer to act now (takes the mutex).
  bool asked(bool also_urgent);

  // The rare requests, and a flush's wait for the writer.
  mutable std::mutex mutex_;
  std::condition_variable drained_;
  bool urgent_ = false;        // a flush waits: no lingering
  std::uint64_t written_ = 0;  // lines taken off the queue and handled
  bool reopen_requested_ = false;
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace airlock::record

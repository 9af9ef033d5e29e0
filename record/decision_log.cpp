#include "record/decision_log.hpp"

#include "base/errno_text.hpp"

#include <cerrno>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace airlock::record {
namespace {

int open_sink(const std::string& path) {
  if (path == "-") return ::dup(STDOUT_FILENO);
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

}  // namespace

std::string render_log_dropped_line(std::uint64_t count, std::chrono::system_clock::time_point ts) {
  decision_record r;
  r.ts = ts;
  std::string line = render_json_line(r);
  // A log_dropped line is not a decision; it carries only when and how many.
  std::string head = line.substr(0, line.find(",\"event\""));
  return head + ",\"event\":\"" + std::string(to_string(event_kind::log_dropped)) +
         "\",\"count\":" + std::to_string(count) + "}\n";
}

base::result<std::unique_ptr<decision_log>> decision_log::open(const std::string& path, std::size_t capacity) {
  int fd = open_sink(path);
  if (fd < 0) return "cannot open decision log '" + path + "': " + base::errno_text();
  return std::unique_ptr<decision_log>(new decision_log(path, fd, capacity));
}

decision_log::decision_log(std::string path, int fd, std::size_t capacity)
    : path_(std::move(path)), fd_(fd), capacity_(capacity), writer_([this] { run(); }) {}

decision_log::~decision_log() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_writer();
  writer_.join();
  // What a loop still queued after the writer's last look (none do: they stop first).
  for (auto* q = newest_.exchange(nullptr); q != nullptr;) queued::destroy(std::exchange(q, q->next));
  if (fd_ >= 0) ::close(fd_);
}

decision_log::queued* decision_log::queued::make(std::string_view line) noexcept {
  void* block = ::operator new(sizeof(queued) + line.size(), std::nothrow);
  if (block == nullptr) return nullptr;
  auto* q = ::new (block) queued{nullptr, line.size()};
  std::memcpy(q + 1, line.data(), line.size());
  return q;
}

void decision_log::queued::destroy(queued* q) noexcept {
  q->~queued();
  ::operator delete(q);
}

void decision_log::count_dropped(std::uint64_t lines) noexcept {
  dropped_pending_.fetch_add(lines, std::memory_order_relaxed);
  dropped_total_.fetch_add(lines, std::memory_order_relaxed);
}

void decision_log::emit(const decision_record& r) noexcept {
  // Rendered into a buffer this thread keeps (event loops on other threads log too): the
  // line's own copy is then allocated once, at its size.
  thread_local std::string rendered;
  try {
    rendered.clear();
    append_json_line(rendered, r);
  } catch (...) {  // out of memory rendering: count it like any other loss
    count_dropped(1);
    return;
  }
  add(rendered);
  if (rendered.capacity() > 65536) std::string().swap(rendered);  // a giant line is not kept
}

void decision_log::write(std::string line) noexcept { add(line); }

void decision_log::add(std::string_view line) noexcept {
  const std::size_t before = pending_lines_.fetch_add(1, std::memory_order_relaxed);
  if (before >= capacity_) {
    pending_lines_.fetch_sub(1, std::memory_order_relaxed);
    count_dropped(1);
    unwritable_.store(true, std::memory_order_relaxed);
    return;
  }
  queued* q = queued::make(line);
  if (q == nullptr) {  // out of memory: lost, and counted
    pending_lines_.fetch_sub(1, std::memory_order_relaxed);
    count_dropped(1);
    return;
  }
  q->next = newest_.load(std::memory_order_relaxed);
  while (!newest_.compare_exchange_weak(q->next, q, std::memory_order_seq_cst, std::memory_order_relaxed)) {
  }
  enqueued_.fetch_add(1, std::memory_order_relaxed);
  // An idle writer is woken by the first line, a lingering one by a quarter-full queue.
  // The push above and the writer's "idle, then look at the queue" are both sequentially
  // consistent, so either this sees the writer idle or the writer sees this line. And the
  // writer reads the word before it looks: a wake-up that comes after its look has moved
  // the word, so its sleep returns at once.
  if (writer_idle_.load(std::memory_order_seq_cst) || before == capacity_ / 4) wake_writer();
}

void decision_log::wake_writer() noexcept {
  wake_word_.fetch_add(1, std::memory_order_seq_cst);
  ::syscall(SYS_futex, &wake_word_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void decision_log::sleep_unless_moved(std::uint32_t seen, std::chrono::nanoseconds limit) noexcept {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                std::atomic<std::uint32_t>::is_always_lock_free);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(limit.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(limit.count() % 1000000000);
  // Returns at once when the word has moved; EINTR and spurious returns are a look more.
  ::syscall(SYS_futex, &wake_word_, FUTEX_WAIT_PRIVATE, seen, limit.count() > 0 ? &ts : nullptr, nullptr, 0);
}

template <typename Done>
void decision_log::sleep_until(Done done, std::optional<std::chrono::steady_clock::time_point> until) {
  for (;;) {
    const auto seen = wake_word_.load(std::memory_order_seq_cst);
    if (done()) return;
    auto left = std::chrono::nanoseconds::zero();  // no limit
    if (until) {
      left = *until - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds::zero()) return;
    }
    sleep_unless_moved(seen, left);
  }
}

bool decision_log::asked(bool also_urgent) {
  std::lock_guard lock(mutex_);
  return stopping_ || reopen_requested_ || (also_urgent && urgent_);
}

std::size_t decision_log::take_queued(std::string& batch) {
  queued* q = newest_.exchange(nullptr, std::memory_order_acquire);
  queued* oldest_first = nullptr;
  while (q != nullptr) oldest_first = std::exchange(q, std::exchange(q->next, oldest_first));
  std::size_t n = 0;
  for (auto* p = oldest_first; p != nullptr; ++n) {
    try {
      batch.append(p->line());
    } catch (...) {  // out of memory: this line is lost, and counted
      count_dropped(1);
    }
    queued::destroy(std::exchange(p, p->next));
  }
  pending_lines_.fetch_sub(n, std::memory_order_relaxed);
  return n;
}

void decision_log::reopen() noexcept {
  {
    std::lock_guard lock(mutex_);
    reopen_requested_ = true;
  }
  wake_writer();
}

void decision_log::flush() noexcept {
  std::unique_lock lock(mutex_);
  const auto target = enqueued_.load(std::memory_order_relaxed);
  if (written_ >= target) return;
  urgent_ = true;
  wake_writer();
  drained_.wait(lock, [&] { return written_ >= target || stopping_; });
}

std::size_t decision_log::queue_depth() const noexcept { return pending_lines_.load(std::memory_order_relaxed); }

std::uint64_t decision_log::dropped_total() const noexcept { return dropped_total_.load(std::memory_order_relaxed); }

bool decision_log::write_all(const std::string& data) noexcept {
  std::size_t off = 0;
  while (off < data.size()) {
    auto n = ::write(fd_, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A disk that fills half-way through would leave a torn line that breaks every
      // reader: cut the file back to where this write began (regular files; a pipe cannot
      // be cut). Asked only now, not before every write: the file ends `off` bytes past
      // that point (the log appends, and airlock is its one writer).
      struct stat st {};
      if (off > 0 && ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= static_cast<off_t>(off) &&
          ::ftruncate(fd_, st.st_size - static_cast<off_t>(off)) != 0) {
        // Nothing better to do: the next reader skips one unparseable line.
      }
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}

void decision_log::run() {
  std::string batch;
  bool lingering = false;  // the last look found lines: more are probably coming
  for (;;) {
    bool reopen = false;
    if (lingering) {
      // Lines gather meanwhile; only a flush, reopen, shutdown or a filling queue cut it short.
      sleep_until([&] { return asked(true) || pending_lines_.load() > capacity_ / 4; },
                  std::chrono::steady_clock::now() + linger);
    } else {
      writer_idle_.store(true, std::memory_order_seq_cst);
      sleep_until([&] { return newest_.load(std::memory_order_seq_cst) != nullptr || asked(false); });
      writer_idle_.store(false, std::memory_order_relaxed);
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping_ && newest_.load() == nullptr && !reopen_requested_ && dropped_pending_.load() == 0) return;
      urgent_ = false;
      reopen = std::exchange(reopen_requested_, false);
    }
    batch.clear();
    const std::uint64_t dropped = dropped_pending_.exchange(0, std::memory_order_relaxed);
    const std::size_t handled = take_queued(batch);
    lingering = handled > 0;
    if (reopen && path_ != "-") {
      int fd = open_sink(path_);
      if (fd >= 0) {
        ::close(fd_);
        fd_ = fd;
      }
    }
    // One write for the whole batch; a log_dropped line (rare) goes first, on its own.
    const bool dropped_ok = dropped == 0 || write_all(render_log_dropped_line(dropped));
    const bool ok = dropped_ok && (batch.empty() || write_all(batch));
    if (dropped > 0 || !batch.empty()) unwritable_.store(!ok, std::memory_order_relaxed);
    // A burst's buffer is not kept for good.
    if (batch.capacity() > (std::size_t{4} << 20)) std::string().swap(batch);
    if (!ok) {
      // Nothing of this batch is known to be on disk: report it with the next write.
      dropped_pending_.fetch_add((dropped_ok ? 0 : dropped) + handled, std::memory_order_relaxed);
      dropped_total_.fetch_add(handled, std::memory_order_relaxed);
    }
    {
      std::lock_guard lock(mutex_);
      written_ += handled;
    }
    drained_.notify_all();
    if (!ok) {
      // The sink refuses (full disk, closed pipe): back off instead of spinning.
      lingering = false;
      bool stopping = false;
      sleep_until(
          [&] {
            std::lock_guard lock(mutex_);
            return stopping = stopping_;
          },
          std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
      if (stopping && newest_.load() == nullptr) return;
    }
  }
}

}  // namespace airlock::record

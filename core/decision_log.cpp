#include "core/decision_log.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace airlock::core {
namespace {

int open_sink(const std::string& path) {
  if (path == "-") return ::dup(STDOUT_FILENO);
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

std::string dropped_line(std::uint64_t count) {
  decision_record r;
  std::string line = render_json_line(r);
  // A log_dropped line is not a decision; it carries only when and how many.
  std::string ts = line.substr(0, line.find(",\"event\""));
  return ts + ",\"event\":\"log_dropped\",\"count\":" + std::to_string(count) + "}\n";
}

}  // namespace

boost::system::result<std::unique_ptr<decision_log>, std::string> decision_log::open(const std::string& path,
                                                                                    std::size_t capacity) {
  int fd = open_sink(path);
  if (fd < 0) return "cannot open decision log '" + path + "': " + std::strerror(errno);
  return std::unique_ptr<decision_log>(new decision_log(path, fd, capacity));
}

decision_log::decision_log(std::string path, int fd, std::size_t capacity)
    : path_(std::move(path)), fd_(fd), capacity_(capacity), writer_([this] { run(); }) {}

decision_log::~decision_log() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
  if (fd_ >= 0) ::close(fd_);
}

void decision_log::emit(const decision_record& r) noexcept {
  // Rendered outside the lock (event loops on other threads log too), into a buffer this
  // thread keeps: no allocation per line, one copy into the batch.
  thread_local std::string rendered;
  try {
    rendered.clear();
    append_json_line(rendered, r);
  } catch (...) {  // out of memory rendering: count it like any other loss
    std::lock_guard lock(mutex_);
    ++dropped_pending_;
    ++dropped_total_;
    return;
  }
  add(rendered);
  if (rendered.capacity() > 65536) std::string().swap(rendered);  // a giant line is not kept
}

void decision_log::write(std::string line) noexcept { add(line); }

void decision_log::add(std::string_view line) noexcept {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    if (pending_lines_ >= capacity_) {
      ++dropped_pending_;
      ++dropped_total_;
      unwritable_.store(true, std::memory_order_relaxed);
      return;
    }
    try {
      pending_.append(line);
    } catch (...) {
      ++dropped_pending_;
      ++dropped_total_;
      return;
    }
    ++pending_lines_;
    ++enqueued_;
    // An idle writer is woken by the first line only; a lingering one by a quarter-full queue.
    wake = (writer_idle_ && pending_lines_ == 1) || pending_lines_ == capacity_ / 4 + 1;
  }
  if (wake) wake_.notify_one();
}

void decision_log::reopen() noexcept {
  {
    std::lock_guard lock(mutex_);
    reopen_requested_ = true;
  }
  wake_.notify_one();
}

void decision_log::flush() noexcept {
  std::unique_lock lock(mutex_);
  const auto target = enqueued_;
  if (written_ >= target) return;
  urgent_ = true;
  wake_.notify_one();
  drained_.wait(lock, [&] { return written_ >= target || stopping_; });
}

std::size_t decision_log::queue_depth() const noexcept {
  std::lock_guard lock(mutex_);
  return pending_lines_;
}

std::uint64_t decision_log::dropped_total() const noexcept {
  std::lock_guard lock(mutex_);
  return dropped_total_;
}

bool decision_log::write_all(const std::string& data) noexcept {
  // A disk that fills half-way through would leave a torn line that breaks every reader:
  // cut the file back to where this write began (regular files; a pipe cannot be cut).
  struct stat st {};
  const bool regular = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  std::size_t off = 0;
  while (off < data.size()) {
    auto n = ::write(fd_, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (regular && off > 0 && ::ftruncate(fd_, st.st_size) != 0) {
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
    std::uint64_t dropped = 0;
    std::size_t handled = 0;
    {
      std::unique_lock lock(mutex_);
      if (lingering) {
        // Lines gather meanwhile; only a flush, reopen, shutdown or a filling queue cut it short.
        wake_.wait_for(lock, linger, [&] {
          return stopping_ || reopen_requested_ || urgent_ || pending_lines_ > capacity_ / 4;
        });
      } else {
        writer_idle_ = true;
        wake_.wait(lock, [&] { return stopping_ || reopen_requested_ || pending_lines_ > 0; });
        writer_idle_ = false;
      }
      if (stopping_ && pending_lines_ == 0 && !reopen_requested_ && dropped_pending_ == 0) return;
      batch.clear();
      batch.swap(pending_);
      handled = std::exchange(pending_lines_, 0);
      urgent_ = false;
      reopen = std::exchange(reopen_requested_, false);
      dropped = std::exchange(dropped_pending_, 0);
    }
    lingering = handled > 0;
    if (reopen && path_ != "-") {
      int fd = open_sink(path_);
      if (fd >= 0) {
        ::close(fd_);
        fd_ = fd;
      }
    }
    // One write for the whole batch; a log_dropped line (rare) goes first, on its own.
    const bool dropped_ok = dropped == 0 || write_all(dropped_line(dropped));
    const bool ok = dropped_ok && (batch.empty() || write_all(batch));
    if (dropped > 0 || !batch.empty()) unwritable_.store(!ok, std::memory_order_relaxed);
    // A burst's buffer is not kept for good.
    if (batch.capacity() > (std::size_t{4} << 20)) std::string().swap(batch);
    {
      std::lock_guard lock(mutex_);
      if (!ok) {
        // Nothing of this batch is known to be on disk: report it with the next write.
        dropped_pending_ += (dropped_ok ? 0 : dropped) + handled;
        dropped_total_ += handled;
      }
      written_ += handled;
    }
    drained_.notify_all();
    if (!ok) {
      // The sink refuses (full disk, closed pipe): back off instead of spinning.
      lingering = false;
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
      if (stopping_ && pending_lines_ == 0) return;
    }
  }
}

}  // namespace airlock::core

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
  try {
    write(render_json_line(r));
  } catch (...) {  // out of memory rendering: count it like any other loss
    std::lock_guard lock(mutex_);
    ++dropped_pending_;
    ++dropped_total_;
  }
}

void decision_log::write(std::string line) noexcept {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= capacity_) {
      ++dropped_pending_;
      ++dropped_total_;
      return;
    }
    queue_.push_back(std::move(line));
    ++enqueued_;
  }
  wake_.notify_one();
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
  drained_.wait(lock, [&] { return written_ >= target || stopping_; });
}

std::size_t decision_log::queue_depth() const noexcept {
  std::lock_guard lock(mutex_);
  return queue_.size();
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
  std::deque<std::string> batch;
  for (;;) {
    bool reopen = false;
    std::uint64_t dropped = 0;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || reopen_requested_ || !queue_.empty(); });
      if (stopping_ && queue_.empty() && !reopen_requested_ && dropped_pending_ == 0) return;
      batch.swap(queue_);
      reopen = std::exchange(reopen_requested_, false);
      dropped = std::exchange(dropped_pending_, 0);
    }
    if (reopen && path_ != "-") {
      int fd = open_sink(path_);
      if (fd >= 0) {
        ::close(fd_);
        fd_ = fd;
      }
    }
    // Gather the batch into one write: one syscall per wake-up, not per line.
    std::string data;
    if (dropped) data += dropped_line(dropped);
    for (auto& line : batch) data += line;
    const bool ok = data.empty() || write_all(data);
    const auto handled = batch.size();
    batch.clear();
    {
      std::lock_guard lock(mutex_);
      if (!ok) {
        // Nothing of this batch is known to be on disk: report it with the next write.
        dropped_pending_ += dropped + handled;
        dropped_total_ += handled;
      }
      written_ += handled;
    }
    drained_.notify_all();
    if (!ok) {
      // The sink refuses (full disk, closed pipe): back off instead of spinning.
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; });
      if (stopping_ && queue_.empty()) return;
    }
  }
}

}  // namespace airlock::core

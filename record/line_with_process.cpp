#include "record/line_with_process.hpp"

#include "base/spawn.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdio>
#include <memory>

namespace airlock::record {

namespace asio = boost::asio;

namespace {

// Owns a line until it is written: whether the waiting coroutine finishes, or is destroyed
// unstarted or half-way with the loop, the line goes out exactly once.
struct pending_line {
  decision_sink& sink;
  decision_record record;
  ~pending_line() { sink.emit(record); }
};

}  // namespace

void emit_with_process(decision_sink& sink, const decision_record& rec, attribution::probe& p) noexcept {
  if (p.active()) {
    try {
      auto ex = p.executor();
      std::unique_ptr<pending_line> line(new pending_line{sink, rec});
      base::spawn_session(
          ex,
          [](std::unique_ptr<pending_line> l, attribution::probe pr) -> asio::awaitable<void> {
            l->record.process_json = co_await pr.json(std::chrono::milliseconds(200));
          }(std::move(line), std::move(p)),
          [](const char* what) { std::fprintf(stderr, "airlock: decision line: %s\n", what); });
      return;
    } catch (...) {
    }
  }
  sink.emit(rec);
}

}  // namespace airlock::record

#include "attribution/probe.hpp"

#include "base/deadline.hpp"
#include "base/spawn.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdio>

namespace airlock::attribution {

namespace asio = boost::asio;

probe probe::start(finder* f, const std::string& netns, const socket_key& key, asio::any_io_executor ex,
                   std::chrono::milliseconds limit) {
  probe p;
  if (!f || netns.empty()) return p;
  p.state_ = std::make_shared<state>(ex);
  base::spawn_session(
      ex,
      [](finder& owner, std::string path, socket_key k, std::chrono::milliseconds l,
         std::shared_ptr<state> s) -> asio::awaitable<void> {
        auto r = co_await base::with_deadline(async_lookup(owner, std::move(path), k, asio::use_awaitable), l);
        s->result = r ? std::move(*r) : unknown_result(cause::timed_out);
        s->ready.cancel();
      }(*f, netns, key, limit, p.state_),
      [](const char* what) { std::fprintf(stderr, "airlock: process attribution: %s\n", what); });
  return p;
}

asio::awaitable<std::string> probe::json(std::chrono::milliseconds wait) const {
  if (!state_) co_return std::string();
  if (!state_->result) {
    state_->ready.expires_after(wait);
    co_await state_->ready.async_wait(base::nothrow);
  }
  co_return render_process_json(state_->result ? *state_->result : unknown_result(cause::timed_out));
}

namespace {

// Owns the line until it is emitted: whether the waiting coroutine finishes, or is
// destroyed unstarted or half-way with the loop, the line goes out exactly once.
struct pending_line {
  record::decision_sink& sink;
  record::decision_record record;
  ~pending_line() { sink.emit(record); }
};

}  // namespace

void emit_with_process(asio::any_io_executor ex, record::decision_sink& sink, record::decision_record rec, probe p,
                       std::chrono::milliseconds wait) {
  if (!p.active()) {
    sink.emit(rec);
    return;
  }
  std::unique_ptr<pending_line> line(new pending_line{sink, std::move(rec)});
  base::spawn_session(
      ex,
      [](std::unique_ptr<pending_line> l, probe pr, std::chrono::milliseconds w) -> asio::awaitable<void> {
        l->record.process_json = co_await pr.json(w);
      }(std::move(line), std::move(p), wait),
      [](const char* what) { std::fprintf(stderr, "airlock: decision line: %s\n", what); });
}

void emit_line(record::decision_sink& sink, const record::decision_record& rec, probe& p) noexcept {
  if (p.active()) {
    try {
      auto ex = p.executor();  // before the probe is moved from
      emit_with_process(std::move(ex), sink, rec, std::move(p));
      return;
    } catch (...) {
    }
  }
  sink.emit(rec);
}

}  // namespace airlock::attribution

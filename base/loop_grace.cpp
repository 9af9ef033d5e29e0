#include "base/loop_grace.hpp"

#include <boost/asio/post.hpp>

#include <atomic>

namespace airlock::base {

namespace asio = boost::asio;

// One grace period: its garbage, and how many loops have yet to run their handler. Freed
// by the last handler to run, or with the last handler destroyed unrun (a stopped loop).
struct loop_grace::period {
  std::vector<garbage> items;
  std::atomic<std::size_t> remaining;

  period(std::vector<garbage> g, std::size_t loops) : items(std::move(g)), remaining(loops) {}
  ~period() { free_all(); }
  void free_all() noexcept {
    for (auto& g : items) g.free(g.object);
    items.clear();
  }
};

loop_grace::~loop_grace() {
  // The loops are gone (their threads joined): nothing reads any more.
  for (auto& g : pending_) g.free(g.object);
}

void loop_grace::start(asio::any_io_executor writer, std::vector<asio::any_io_executor> readers) {
  timer_.emplace(writer);
  readers_ = std::move(readers);
}

void loop_grace::retire(garbage g) {
  if (readers_.empty()) {  // before start(): only the setup thread runs
    g.free(g.object);
    return;
  }
  pending_.push_back(g);
  if (!in_flight_) arm();
}

// Gathered for a batch, so that a stream of DNS answers costs each loop a handler every
// 10 ms rather than one per answer (each may be a wake-up of a sleeping loop).
void loop_grace::arm() {
  if (timer_armed_) return;
  timer_armed_ = true;
  timer_->expires_after(batch);
  timer_->async_wait([this](const boost::system::error_code& ec) {
    timer_armed_ = false;
    if (!ec) begin();
  });
}

void loop_grace::begin() {
  if (pending_.empty() || in_flight_) return;
  in_flight_ = true;
  ++periods_;
  auto p = std::make_shared<period>(std::move(pending_), readers_.size());
  pending_.clear();
  auto writer = timer_->get_executor();
  for (auto& loop : readers_) {
    asio::post(loop, [p, writer, this] {
      if (p->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      p->free_all();
      asio::post(writer, [this] { ended(); });
    });
  }
}

void loop_grace::ended() {
  in_flight_ = false;
  if (!pending_.empty()) arm();
}

}  // namespace airlock::base

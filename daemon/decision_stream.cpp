#include "daemon/decision_stream.hpp"

#include "base/deadline.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace airlock::daemon {

namespace asio = boost::asio;
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoded; nothing when an escape is cut short or not hexadecimal.
std::optional<std::string> percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// A stream of a line queue's lines (the decision feed's, an approver's): what is queued
// goes out as one chunk; lines the queue lost are said in their place as
// {"event":"<dropped_event>","lines":N}; a newline alone when nothing came for a heartbeat.
class queue_stream final : public body_stream {
 public:
  queue_stream(asio::any_io_executor ex, std::chrono::steady_clock::duration heartbeat, std::string dropped_event)
      : wait_(std::move(ex)), heartbeat_(heartbeat), dropped_event_(std::move(dropped_event)) {}

  // Subscribes through `subscribe(wake)`, whose wake-up may come from any loop: the wait is
  // this loop's to end.
  template <typename Subscribe>
  static std::shared_ptr<queue_stream> open(asio::any_io_executor ex, std::chrono::steady_clock::duration heartbeat,
                                            std::string dropped_event, Subscribe subscribe) {
    auto s = std::make_shared<queue_stream>(ex, heartbeat, std::move(dropped_event));
    s->queue_ = subscribe([ex, weak = std::weak_ptr<queue_stream>(s)] {
      asio::post(ex, [weak] {
        if (auto alive = weak.lock()) alive->wait_.cancel();
      });
    });
    return s;
  }

  asio::awaitable<std::optional<std::string>> next() override {
    for (;;) {
      std::uint64_t dropped = 0;
      std::string lines = queue_->take(dropped);
      if (dropped)
        lines.insert(0, "{\"event\":\"" + dropped_event_ + "\",\"lines\":" + std::to_string(dropped) + "}\n");
      if (!lines.empty()) co_return lines;
      // take() armed the wake-up, and nothing runs on this loop before the wait begins:
      // a line from now on ends it.
      wait_.expires_after(heartbeat_);
      auto [ec] = co_await wait_.async_wait(base::nothrow);
      if (!ec) co_return std::string("\n");
      // Ended by the connection (its client went away), not by a line: no more.
      if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none)
        co_return std::nullopt;
    }
  }

 private:
  asio::steady_timer wait_;
  const std::chrono::steady_clock::duration heartbeat_;
  const std::string dropped_event_;
  std::shared_ptr<record::line_queue> queue_;
};

}  // namespace

base::result<record::feed_filter> parse_decisions_query(std::string_view target) {
  record::feed_filter f;
  const auto q = target.find('?');
  if (q == std::string_view::npos) return f;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    auto value = percent_decoded(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
    if (!value) return base::fail<record::feed_filter>(std::string(key) + ": a %-escape that is not two hex digits");
    if (key == "session") {
      if (value->empty()) return base::fail<record::feed_filter>("session: expected a session id");
      f.session = std::move(*value);
    } else if (key == "deny") {
      if (*value == "1" || *value == "true" || value->empty()) f.denials_only = true;
      else if (*value == "0" || *value == "false") f.denials_only = false;
      else return base::fail<record::feed_filter>("deny: expected 1 or 0");
    } else {
      return base::fail<record::feed_filter>("unknown parameter '" + std::string(key) + "' (expected session, deny)");
    }
  }
  return f;
}

std::shared_ptr<body_stream> stream_decisions(asio::any_io_executor ex, record::decision_feed& feed,
                                              record::feed_filter f, std::chrono::steady_clock::duration heartbeat) {
  if (feed.watchers() >= max_decision_streams) return nullptr;
  return queue_stream::open(std::move(ex), heartbeat, "tail_dropped", [&](std::function<void()> wake) {
    return std::shared_ptr<record::line_queue>(feed.subscribe(std::move(f), std::move(wake)));
  });
}

std::shared_ptr<body_stream> stream_approvals(asio::any_io_executor ex, record::approval_desk& desk,
                                              std::string session, std::chrono::steady_clock::duration heartbeat) {
  if (desk.approvers() >= max_approval_streams) return nullptr;
  return queue_stream::open(std::move(ex), heartbeat, "approvals_dropped", [&](std::function<void()> wake) {
    return desk.watch(std::move(session), std::move(wake));
  });
}

}  // namespace airlock::daemon

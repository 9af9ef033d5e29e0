#pragma once
// A lookup started early and collected late. The data path starts it as soon as it knows
// the session (the sandbox's socket surely exists then) and collects the result when its
// decision line is due; the lookup itself runs on the finder's thread meanwhile, so the
// data path never waits for /proc.
#include "attribution/finder.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace airlock::attribution {

class probe {
 public:
  probe() = default;  // inactive: no lookup, no "process" in the line
  // Starts the lookup; inactive when there is no finder or no namespace to look in.
  static probe start(finder* f, const std::string& netns, const socket_key& key, boost::asio::any_io_executor ex,
                     std::chrono::milliseconds limit = std::chrono::milliseconds(500));

  bool active() const noexcept { return state_ != nullptr; }
  boost::asio::any_io_executor executor() const { return state_->ready.get_executor(); }
  // The line's "process" value once the lookup has answered, waiting at most `wait`
  // ({"unknown":"timed out"} past it); "" when inactive.
  boost::asio::awaitable<std::string> json(std::chrono::milliseconds wait) const;

 private:
  struct state {
    explicit state(boost::asio::any_io_executor ex) : ready(std::move(ex)) {}
    std::optional<lookup_result> result;
    boost::asio::steady_timer ready;  // cancelled when the result arrives
  };
  std::shared_ptr<state> state_;
};

}  // namespace airlock::attribution

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

}  // namespace airlock::attribution

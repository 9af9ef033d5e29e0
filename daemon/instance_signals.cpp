// What the signals do to a running instance: SIGHUP reloads the policy (as the control
// API's POST /v1/reload does) and reopens the log; SIGINT/SIGTERM (or request_stop, for the
// embedded daemon) close the listeners, drain, then stop the loop.
#include "base/deadline.hpp"
#include "daemon/instance_parts.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>

namespace airlock::daemon {

namespace {

namespace asio = boost::asio;

asio::awaitable<void> drain_then_stop(parts_t& r) {
  // Listeners are closed; give open connections a moment to finish, then stop. Those
  // still open are cut, and each still logs its line as its relay (or coroutine) is destroyed.
  asio::steady_timer tick(r.io);
  for (int i = 0; i < 50 && r.proxy_ctx->limits.open() > 0; ++i) {
    tick.expires_after(std::chrono::milliseconds(100));
    co_await tick.async_wait(base::nothrow);
  }
  r.io.stop();
}

}  // namespace

void begin_shutdown(parts_t& r) {
  if (r.stopping.exchange(true)) return;
  close_listeners(r);
  if (r.host_watch) r.host_watch->stop();
  co_spawn(r.io, drain_then_stop(r), report("shutdown"));
}

registry_result<std::shared_ptr<const policy::snapshot>> reload(parts_t& r) {
  auto fail = [&](registry_error e) {
    r.stats.count_reload(false);
    return e;
  };
  if (!r.options.config_path)
    return fail(registry_error{409, {"the embedded default policy is in use; there is no file to reload"}});
  auto cfg = policy::load_config_file(*r.options.config_path);
  if (!cfg.has_value()) {
    registry_error e{422, {}};
    for (const auto& err : cfg.error()) e.messages.push_back(err.to_string());
    return fail(std::move(e));
  }
  // The CA and the origin trust are loaded once, at start: a reload cannot bring them.
  if (cfg->inspection.ca_dir != r.cfg.inspection.ca_dir || cfg->inspection.upstream_ca != r.cfg.inspection.upstream_ca)
    return fail(registry_error{
        422,
        {cfg->file + ": inspection: ca_dir and upstream_ca are read at start; restart the daemon to change them"}});
  auto snap = r.sessions->apply(std::move(*cfg));
  if (!snap.has_value()) return fail(snap.error());
  r.stats.count_reload(true);
  return snap;
}

void instance::request_stop() {
  asio::post(parts_->io, [&r = *parts_] { begin_shutdown(r); });
}

void instance::handle_signals() {
  co_spawn(
      parts_->io,
      [](parts_t& r) -> asio::awaitable<void> {
        asio::signal_set signals(r.io, SIGINT, SIGTERM, SIGHUP);
        for (;;) {
          auto [ec, signo] = co_await signals.async_wait(base::nothrow);
          if (ec) co_return;
          if (signo == SIGHUP) {
            if (auto snap = reload(r); snap.has_value()) {
              std::fprintf(stderr,
                           "airlock: reloaded policy %s (%zu rules); changes to listen:, dns:, limits:, "
                           "timeouts: and overload: need a restart\n",
                           (*snap)->version().c_str(), (*snap)->rule_count());
            } else {
              std::fprintf(stderr, "airlock: reload failed; keeping policy %s:\n",
                           r.policies->current()->version().c_str());
              for (const auto& m : snap.error().messages) std::fprintf(stderr, "%s\n", m.c_str());
            }
            r.log->reopen();
            continue;
          }
          if (r.stopping) {
            r.io.stop();  // a second signal: stop now
            co_return;
          }
          std::fprintf(stderr, "airlock: shutting down (%zu open connections)\n",
                       static_cast<std::size_t>(r.proxy_ctx->limits.open()));
          begin_shutdown(r);
        }
      }(*parts_),
      report("signal handler"));
}

}  // namespace airlock::daemon

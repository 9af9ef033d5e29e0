#pragma once
// The upstream resolver: a c-ares channel driven by the same Asio event loop as the rest
// of airlock (c-ares socket-state callbacks -> descriptor waits, ares_timeout -> a timer).
// No resolver threads. One resolver per io_context; not thread-safe.
#include "base/result.hpp"
#include "policy/cidr.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/result.hpp>

#include <ares.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace airlock::dns {

enum class resolve_error { timeout, unreachable, server_failure, bad_answer, shutting_down, overloaded, other };
std::string_view to_string(resolve_error e) noexcept;

using raw_answer = boost::system::result<std::string, resolve_error>;

class resolver {
 public:
  struct options {
    std::vector<policy::endpoint_config> servers;  // empty: /etc/resolv.conf
    std::chrono::milliseconds timeout{1000};       // first try; c-ares doubles it per round: 1 s + 2 s in all
    int tries = 2;
    std::size_t max_in_flight = 1024;  // distinct upstream queries at once; beyond: overloaded
  };

  // Creates the channel; the error names what to fix.
  static base::result<std::unique_ptr<resolver>> create(boost::asio::any_io_executor ex, const options& opts);
  ~resolver();
  resolver(const resolver&) = delete;

  // Told how long each upstream question took and whether an answer came back (metrics).
  // Called on the event loop, once per upstream query (not per coalesced waiter).
  std::function<void(std::chrono::steady_clock::duration, bool answered)> on_upstream_done;
  resolver& operator=(const resolver&) = delete;

  // Sends one recursive query upstream and completes with the raw answer, whatever its
  // RCODE (NXDOMAIN and NODATA are answers too); errors only when there is no answer.
  // Identical questions asked while one is outstanding share it: one upstream query per
  // (name, type), so a burst of clients costs the upstream one packet. Past max_in_flight
  // distinct questions it completes at once with `overloaded` (the caller answers SERVFAIL).
  template <typename Token = boost::asio::use_awaitable_t<>>
  auto query(const std::string& name, std::uint16_t qtype, Token&& token = {}) {
    return boost::asio::async_initiate<Token, void(raw_answer)>(
        [this](auto handler, const std::string& qname, std::uint16_t type) {
          start(qname, type, std::make_unique<pending_impl<decltype(handler)>>(std::move(handler), executor_));
        },
        token, name, qtype);
  }

 private:
  struct pending {
    virtual ~pending() = default;
    virtual void complete(raw_answer answer) = 0;
  };
  template <typename Handler>
  struct pending_impl final : pending {
    pending_impl(Handler h, boost::asio::any_io_executor ex) : handler(std::move(h)), executor(std::move(ex)) {}
    void complete(raw_answer answer) override {
      // Never complete inside a c-ares callback: c-ares may be mid-iteration.
      auto ex = boost::asio::get_associated_executor(handler, executor);
      boost::asio::post(ex, [h = std::move(handler), a = std::move(answer)]() mutable { std::move(h)(std::move(a)); });
    }
    Handler handler;
    boost::asio::any_io_executor executor;
  };
  struct watched_socket {
    explicit watched_socket(boost::asio::any_io_executor ex) : descriptor(std::move(ex)) {}
    boost::asio::posix::stream_descriptor descriptor;
    bool want_read = false;
    bool want_write = false;
    bool reading = false;
    bool writing = false;
    bool closed = false;
  };

  // One outstanding upstream question and everyone waiting for its answer.
  struct in_flight {
    resolver* owner;
    std::string key;
    std::vector<std::unique_ptr<pending>> waiters;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  };

  explicit resolver(boost::asio::any_io_executor ex, std::size_t max_in_flight);
  void start(const std::string& name, std::uint16_t qtype, std::unique_ptr<pending> p);
  static void on_answer(void* arg, int status, int timeouts, unsigned char* abuf, int alen);
  static void on_socket_state(void* data, ares_socket_t fd, int readable, int writable);
  void arm(const std::shared_ptr<watched_socket>& w, ares_socket_t fd);
  void rearm_timer();

  boost::asio::any_io_executor executor_;
  ares_channel channel_ = nullptr;
  boost::asio::steady_timer timer_;
  std::unordered_map<ares_socket_t, std::shared_ptr<watched_socket>> sockets_;
  std::unordered_map<std::string, in_flight*> in_flight_;  // owned by c-ares until its callback
  std::size_t max_in_flight_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace airlock::dns

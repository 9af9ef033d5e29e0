// Process attribution for the daemon: which process in a sandbox owns a connection or a DNS
// query's socket. Lookups run on one worker thread owned by the finder, never on the caller's
// thread, through a bounded queue; the event loop only posts a request and later gets a result.
//
//   auto r = co_await base::with_deadline(
//       attribution::async_lookup(finder, "/run/netns/al12-sbx", key, asio::use_awaitable), 50ms);
//   record.process = r ? render_process_json(*r) : render_process_json(unknown_result(cause::timed_out));
#pragma once

#include "attribution/result.hpp"
#include "attribution/socket_key.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace airlock::attribution {

struct finder_options {
  std::size_t queue_capacity = 1024;  // requests waiting for the worker; past it: "queue full"
  std::size_t max_namespaces = 64;    // sock_diag sockets kept open, one per namespace
  // This often, the worker closes what it keeps open for namespaces that are gone.
  std::chrono::milliseconds sweep_interval = std::chrono::seconds(5);
  std::string proc_root = "/proc";
};

class finder {
 public:
  using completion = std::function<void(lookup_result)>;
  using still_wanted = std::function<bool()>;

  explicit finder(finder_options options = {});
  // Stops the worker after its current lookup and joins it. Requests still queued complete
  // with "shutting down" on the worker thread. Destroy the finder before the io_context its
  // async_lookup callers run on: a result is posted there.
  ~finder();
  finder(const finder&) = delete;
  finder& operator=(const finder&) = delete;

  // Queues a lookup. `done` is called exactly once: on the worker thread, or (queue full,
  // finder shutting down) before lookup() returns. It must not throw, and not block for long:
  // the next lookup waits for it. When `wanted` is given and returns false by the time the
  // worker gets to the request, the work is skipped (done is still called, with "timed out").
  void lookup(std::string netns_path, const socket_key& key, completion done, still_wanted wanted = {});

  // Closes the sock_diag socket kept for `netns_path` (call it when the sandbox ends: an open
  // socket keeps its namespace alive). Asynchronous, on the worker.
  void forget(std::string netns_path);

  // Implementation of async_lookup (below); not part of the interface. `executor` is the
  // handler's associated executor, where the result is posted.
  void start_async(boost::asio::any_io_executor executor,
                   boost::asio::any_completion_handler<void(lookup_result)> handler, std::string netns_path,
                   const socket_key& key);

 private:
  struct request {
    std::string netns_path;
    socket_key key;
    completion done;  // empty: forget netns_path
    still_wanted wanted;
  };
  void run();

  finder_options options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<request> queue_;
  bool stopping_ = false;
  std::thread worker_;  // last: it starts running once everything above is built
};

// Looks up `key` in the namespace at `netns_path` on the finder's worker; completes with the
// result on the handler's associated executor (the awaiting coroutine's). Cancellation (as
// base::with_deadline does when its timer wins) completes at once with "timed out", and the
// worker's later result is dropped. Signature: void(lookup_result).
template <typename CompletionToken>
auto async_lookup(finder& f, std::string netns_path, const socket_key& key, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(lookup_result)>(
      [&f](auto handler, std::string path, const socket_key& k) {
        // Taken here, while the handler's type is known: the type-erased handler's executor
        // cannot be posted to (it lacks blocking.never in Boost 1.81).
        boost::asio::any_io_executor executor = boost::asio::get_associated_executor(handler);
        f.start_async(std::move(executor), std::move(handler), std::move(path), k);
      },
      token, std::move(netns_path), key);
}

}  // namespace airlock::attribution

// attribution_probe NETNS_PATH tcp|udp LOCAL REMOTE [--repeat N]
//
// Looks up the owner of the socket LOCAL -> REMOTE (ip:port, IPv6 as [ip]:port) in the network
// namespace at NETNS_PATH through the daemon's path (finder + async_lookup on an io_context)
// and prints the decision log's "process" value. With --repeat N it does N lookups one after
// another and prints their latency (first, median, p90, max, in microseconds) to stderr.
#include "attribution/finder.hpp"
#include "base/deadline.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <time.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace at = airlock::attribution;
namespace asio = boost::asio;

namespace {

std::optional<std::pair<asio::ip::address, std::uint16_t>> parse_endpoint(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const auto port_text = text.substr(colon + 1);
  std::uint16_t port = 0;
  const auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size()) return std::nullopt;
  boost::system::error_code error;
  const auto address = asio::ip::make_address(std::string(host), error);
  if (error) return std::nullopt;
  return std::pair{address, port};
}

int usage() {
  std::fputs("usage: attribution_probe NETNS_PATH tcp|udp LOCAL REMOTE [--repeat N]\n", stderr);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 7) return usage();
  const std::string netns = argv[1];
  const std::string_view proto = argv[2];
  const auto local = parse_endpoint(argv[3]);
  const auto remote = parse_endpoint(argv[4]);
  int repeat = 1;
  if (argc == 7) {
    if (std::string_view(argv[5]) != "--repeat") return usage();
    repeat = std::atoi(argv[6]);
  }
  if ((proto != "tcp" && proto != "udp") || !local || !remote || repeat < 1) return usage();
  const auto key = at::socket_key::make(proto == "tcp" ? at::transport::tcp : at::transport::udp, local->first,
                                        local->second, remote->first, remote->second);

  asio::io_context io;
  at::finder finder;  // after io: destroyed first, as the daemon must
  timespec cpu_start{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_start);
  std::vector<double> micros;
  at::lookup_result last;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (int i = 0; i < repeat; ++i) {
          const auto start = std::chrono::steady_clock::now();
          auto r = co_await airlock::base::with_deadline(at::async_lookup(finder, netns, key, asio::use_awaitable),
                                                         std::chrono::seconds(5));
          micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
          last = r ? std::move(*r) : at::unknown_result(at::cause::timed_out);
        }
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();

  std::printf("%s\n", at::render_process_json(last).c_str());
  if (repeat > 1) {
    timespec cpu_end{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_end);
    // CPU time of the whole process (both threads) per lookup: what a lookup costs, whatever
    // else competes for the cores while it runs.
    const double cpu_us = (static_cast<double>(cpu_end.tv_sec - cpu_start.tv_sec) * 1e6 +
                           static_cast<double>(cpu_end.tv_nsec - cpu_start.tv_nsec) / 1e3) /
                          repeat;
    const double first = micros.front();
    std::sort(micros.begin(), micros.end());
    std::fprintf(stderr, "lookups=%d first_us=%.0f median_us=%.0f p90_us=%.0f max_us=%.0f cpu_us_per_lookup=%.0f\n",
                 repeat, first, micros[micros.size() / 2], micros[micros.size() * 9 / 10], micros.back(), cpu_us);
  }
  return last.chain.empty() ? 1 : 0;
}

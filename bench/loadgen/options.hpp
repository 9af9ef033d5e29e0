#pragma once
// What bench_loadgen was asked to do: one mode and its knobs, parsed from argv.
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace airlock::bench {

struct options {
  std::string mode;  // "idle", "hello" or "requests"
  boost::asio::ip::tcp::endpoint target;
  std::string sni;
  std::string ca_file;                        // idle, requests: the origin's CA (the handshake is verified)
  std::string path = "/small.html";           // idle, requests: the one request made on each connection
  std::size_t connections = 1000;             // idle: how many to open and hold
  std::size_t concurrency = 64;               // connections being opened (or hellos, requests in flight) at once
  std::chrono::milliseconds hold{60'000};     // idle: how long to hold them at most
  std::chrono::milliseconds duration{3'000};  // hello, requests: how long to keep starting connections
  std::size_t segments = 1;                   // hello: TCP segments the ClientHello is cut into
  std::chrono::milliseconds gap{0};           // hello: pause between two segments
  std::string ready_file;                     // idle: gets the count once every attempt is done
  std::string alpn;                           // requests: the one protocol offered, "h2" or "http/1.1"
};

// nullopt after printing what was wrong (or the usage, for --help) to stderr.
std::optional<options> parse_options(int argc, char** argv);

}  // namespace airlock::bench

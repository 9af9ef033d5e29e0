#pragma once
// What bench_loadgen was asked to do: one mode and its knobs, parsed from argv.
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace airlock::bench {

struct options {
  std::string mode;  // "idle" or "hello"
  boost::asio::ip::tcp::endpoint target;
  std::string sni;
  std::string ca_file;                        // idle: the origin's CA (the handshake is verified)
  std::string path = "/small.html";           // idle: the one request made on each connection
  std::size_t connections = 1000;             // idle: how many to open and hold
  std::size_t concurrency = 64;               // connections being opened (or hellos in flight) at once
  std::chrono::milliseconds hold{60'000};     // idle: how long to hold them at most
  std::chrono::milliseconds duration{3'000};  // hello: how long to keep starting connections
  std::size_t segments = 1;                   // hello: TCP segments the ClientHello is cut into
  std::chrono::milliseconds gap{0};           // hello: pause between two segments
  std::string ready_file;                     // idle: gets the count once every attempt is done
};

// nullopt after printing what was wrong (or the usage, for --help) to stderr.
std::optional<options> parse_options(int argc, char** argv);

}  // namespace airlock::bench

#include "bench/loadgen/options.hpp"

#include <boost/asio/ip/address.hpp>

#include <charconv>
#include <cstdio>
#include <string_view>

namespace airlock::bench {

namespace {

constexpr const char* usage = R"(Usage: bench_loadgen MODE --connect IP:PORT --sni NAME [OPTIONS]

Load that wrk and dnsperf cannot express, for bench/run (bench/README.md).

Modes:
  idle    open -n TLS connections (verified handshake, one keep-alive GET each), then hold
          them idle for --hold seconds or until SIGTERM/SIGINT. Prints the counts; writes
          the number held to --ready-file once every attempt has finished.
  hello   for --duration seconds, -c connections at a time send a real ClientHello (OpenSSL's,
          with this SNI) cut into --segments TCP segments --gap-ms apart, and wait for the
          server's first bytes. Prints attempts, answered, refused, failed, the rate, and
          p50/p99 milliseconds from connect to the first answer byte.
  requests
          for --duration seconds, -c workers each loop: connect, a full verified TLS handshake
          (no resumption) offering only --alpn, one GET of --path in that protocol (HTTP/2 by
          a minimal client of its own), the whole response read, close. The same client over
          h2 and http/1.1 compares what each costs a TLS-inspecting proxy. Prints attempts,
          ok (200, whole body), failed (every other attempt, including alpn_mismatch: the
          server chose or insisted on another protocol, and bad_status: not 200), body bytes,
          rps (ok per second) and p50/p90/p99 milliseconds from connect to the response's end.
          Exits 0 only if ok > 0 and failed = 0.

Options:
  --connect IP:PORT   where to connect (the origin's address: interception is the gateway's job)
  --sni NAME          server name (SNI, Host, certificate check)
  --ca FILE           idle, requests: CA that signed the origin's certificate
  --path PATH         idle, requests: the request path (default /small.html)
  -n N                idle: connections to open (default 1000)
  -c N                connections in progress at once (default 64)
  --hold S            idle: seconds to hold (default 60, at most 600)
  --duration S        hello, requests: seconds to run (default 3, at most 600)
  --segments K        hello: segments per ClientHello (default 1)
  --gap-ms MS         hello: pause between segments (default 0)
  --ready-file FILE   idle: written (atomically) with the number of connections held
  --alpn PROTO        requests: h2 or http/1.1, the one protocol offered and spoken
)";

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && ptr == end;
}

bool parse_seconds(std::string_view text, std::chrono::milliseconds& out) {
  double seconds = 0;
  if (!parse_number(text, seconds) || seconds < 0 || seconds > 600) return false;
  out = std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  return true;
}

bool parse_endpoint(std::string_view text, boost::asio::ip::tcp::endpoint& out) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return false;
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(text.substr(0, colon)), ec);
  unsigned short port = 0;
  if (ec || !parse_number(text.substr(colon + 1), port)) return false;
  out = {address, port};
  return true;
}

}  // namespace

std::optional<options> parse_options(int argc, char** argv) {
  options o;
  if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h") {
    std::fputs(usage, stderr);
    return std::nullopt;
  }
  o.mode = argv[1];
  bool have_target = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_loadgen: %s needs a value\n", argv[i]);
      return std::nullopt;
    }
    const std::string_view value = argv[++i];
    bool ok = true;
    if (flag == "--connect") {
      ok = parse_endpoint(value, o.target);
      have_target = ok;
    } else if (flag == "--sni") {
      o.sni = value;
    } else if (flag == "--ca") {
      o.ca_file = value;
    } else if (flag == "--path") {
      o.path = value;
    } else if (flag == "-n") {
      ok = parse_number(value, o.connections) && o.connections <= 100'000;
    } else if (flag == "-c") {
      ok = parse_number(value, o.concurrency) && o.concurrency >= 1 && o.concurrency <= 20'000;
    } else if (flag == "--hold") {
      ok = parse_seconds(value, o.hold);
    } else if (flag == "--duration") {
      ok = parse_seconds(value, o.duration);
    } else if (flag == "--segments") {
      ok = parse_number(value, o.segments) && o.segments >= 1 && o.segments <= 512;
    } else if (flag == "--gap-ms") {
      long ms = 0;
      ok = parse_number(value, ms) && ms >= 0 && ms <= 10'000;
      o.gap = std::chrono::milliseconds(ms);
    } else if (flag == "--ready-file") {
      o.ready_file = value;
    } else if (flag == "--alpn") {
      o.alpn = value;
      ok = o.alpn == "h2" || o.alpn == "http/1.1";
    } else {
      std::fprintf(stderr, "bench_loadgen: unknown option %s (see --help)\n", argv[i - 1]);
      return std::nullopt;
    }
    if (!ok) {
      std::fprintf(stderr, "bench_loadgen: bad value for %s: %s\n", argv[i - 1], argv[i]);
      return std::nullopt;
    }
  }
  if (o.mode != "idle" && o.mode != "hello" && o.mode != "requests") {
    std::fprintf(stderr, "bench_loadgen: unknown mode %s (idle, hello or requests)\n", o.mode.c_str());
    return std::nullopt;
  }
  if (!have_target || o.sni.empty() || (o.mode != "hello" && o.ca_file.empty()) ||
      (o.mode == "requests" && o.alpn.empty())) {
    std::fputs(
        "bench_loadgen: --connect and --sni are required (and --ca for idle and requests, --alpn for requests)\n",
        stderr);
    return std::nullopt;
  }
  return o;
}

}  // namespace airlock::bench

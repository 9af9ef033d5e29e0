// idle: open N verified TLS connections, one keep-alive request on each, then hold them.
// The proxy in between keeps both sides of each connection open; bench/run reads the
// proxy's memory before and after.
#include "base/deadline.hpp"
#include "base/spawn.hpp"
#include "bench/loadgen/loadgen.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

namespace airlock::bench {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using base::nothrow;
using base::with_deadline;
using tls_stream = asio::ssl::stream<tcp::socket>;

// Each step (connect, handshake, request, response) gets this long: a proxy that stalls
// shows up as a failure, never as a hang.
constexpr auto step_limit = std::chrono::seconds(10);

struct idle_state {
  const options& o;
  asio::ssl::context& tls;
  std::vector<std::unique_ptr<tls_stream>> held;
  std::size_t started = 0;
  std::size_t failed = 0;
  std::size_t dropped = 0;  // closed by the other side while held
  std::string first_error;

  void fail(std::string what) {
    ++failed;
    if (first_error.empty()) first_error = std::move(what);
  }
};

std::size_t content_length(std::string_view head) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  const auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return 0;
  return static_cast<std::size_t>(std::strtoul(lower.c_str() + at + 17, nullptr, 10));
}

// One HTTP/1.1 response with a Content-Length body, read whole; what was wrong, or "".
asio::awaitable<std::string> read_response(tls_stream& stream) {
  std::string buffer;
  auto [ec, head_size] = co_await asio::async_read_until(stream, asio::dynamic_buffer(buffer), "\r\n\r\n", nothrow);
  if (ec) co_return "response head: " + ec.message();
  const std::string head = buffer.substr(0, head_size);
  const std::size_t body = content_length(head);
  const std::size_t have = buffer.size() - head_size;
  if (body > have) {
    auto [ec2, n] = co_await asio::async_read(stream, asio::dynamic_buffer(buffer), asio::transfer_exactly(body - have),
                                              nothrow);
    if (ec2) co_return "response body: " + ec2.message();
  }
  if (!head.starts_with("HTTP/1.1 200")) co_return "status: " + head.substr(0, head.find('\r'));
  co_return "";
}

asio::awaitable<void> open_one(idle_state& s) {
  auto stream = std::make_unique<tls_stream>(co_await asio::this_coro::executor, s.tls);
  const auto connected = co_await with_deadline(stream->next_layer().async_connect(s.o.target, nothrow), step_limit);
  if (!connected || std::get<0>(*connected))
    co_return s.fail(connected ? std::get<0>(*connected).message() : "connect timeout");
  // SSL_set_tlsext_host_name without its C cast, which -Wold-style-cast rejects.
  SSL_ctrl(stream->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(s.o.sni.c_str()));
  stream->set_verify_mode(asio::ssl::verify_peer);
  stream->set_verify_callback(asio::ssl::host_name_verification(s.o.sni));
  const auto shaken = co_await with_deadline(stream->async_handshake(asio::ssl::stream_base::client, nothrow),
                                             step_limit);
  if (!shaken || std::get<0>(*shaken)) co_return s.fail(shaken ? std::get<0>(*shaken).message() : "handshake timeout");
  const std::string request = "GET " + s.o.path + " HTTP/1.1\r\nHost: " + s.o.sni +
                              "\r\nConnection: keep-alive\r\n\r\n";
  const auto written = co_await with_deadline(asio::async_write(*stream, asio::buffer(request), nothrow), step_limit);
  if (!written || std::get<0>(*written)) co_return s.fail("request not written");
  const auto problem = co_await with_deadline(read_response(*stream), step_limit);
  if (!problem || !problem->empty()) co_return s.fail(problem ? *problem : "response timeout");
  s.held.push_back(std::move(stream));
}

asio::awaitable<void> opener(idle_state& s) {
  while (s.started < s.o.connections) {
    ++s.started;
    co_await open_one(s);
  }
}

// A held connection does nothing; a read that completes means the peer closed it.
asio::awaitable<void> watch(idle_state& s, tls_stream& stream) {
  std::array<char, 256> sink{};
  auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), nothrow);
  if (ec != asio::error::operation_aborted) ++s.dropped;
}

void write_ready_file(const std::string& path, std::size_t count) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << count << '\n';
  std::filesystem::rename(tmp, path);  // readers never see a half-written file
}

void report_errors(const char* what) { std::fprintf(stderr, "bench_loadgen: %s\n", what); }

}  // namespace

int run_idle(const options& o) {
  asio::io_context io;
  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.load_verify_file(o.ca_file);
  idle_state s{o, tls, {}, 0, 0, 0, {}};
  s.held.reserve(o.connections);

  const auto started = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < std::min(o.concurrency, o.connections); ++i)
    base::spawn_session(io.get_executor(), opener(s), report_errors);
  io.run();
  const double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("established=%zu failed=%zu open_s=%.2f first_error=\"%s\"\n", s.held.size(), s.failed, open_s,
              s.first_error.c_str());
  std::fflush(stdout);
  write_ready_file(o.ready_file, s.held.size());

  io.restart();
  for (auto& stream : s.held) base::spawn_session(io.get_executor(), watch(s, *stream), report_errors);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  asio::steady_timer hold(io, o.hold);
  signals.async_wait([&](auto, int) { io.stop(); });
  hold.async_wait([&](auto) { io.stop(); });
  io.run();
  std::printf("held=%zu dropped_while_held=%zu\n", s.held.size(), s.dropped);
  return s.held.empty() ? 1 : 0;
}

}  // namespace airlock::bench

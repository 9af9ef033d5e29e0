// requests: HTTPS requests on new connections, closed loop. Each of -c workers connects,
// makes a full verified TLS handshake offering exactly one ALPN protocol, GETs one page in
// that protocol, reads it whole, closes, and starts again, until --duration ends. The same
// client speaking h2 and then http/1.1 shows what each costs a TLS-inspecting proxy.
#include "base/deadline.hpp"
#include "base/spawn.hpp"
#include "bench/loadgen/fetch.hpp"
#include "bench/loadgen/loadgen.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace airlock::bench {

namespace {

namespace asio = boost::asio;
using base::nothrow;
using base::with_deadline;
using clock = std::chrono::steady_clock;

constexpr auto connect_limit = std::chrono::seconds(5);
constexpr auto handshake_limit = std::chrono::seconds(10);
// The request and its whole response: a proxy that stalls shows up as a failure, not a hang.
constexpr auto exchange_limit = std::chrono::seconds(10);
constexpr auto goaway_limit = std::chrono::seconds(1);

struct requests_state {
  const options& o;
  asio::ssl::context& tls;
  bool http2;
  clock::time_point end;
  std::size_t attempts = 0;
  std::size_t ok = 0;             // a whole 200 response read
  std::size_t failed = 0;         // every other attempt, the two below included
  std::size_t alpn_mismatch = 0;  // the server chose another protocol, or refused ours
  std::size_t bad_status = 0;     // a whole exchange, but not a 200
  std::size_t bytes = 0;          // body bytes of the ok responses
  std::vector<double> ok_ms;      // connect start to response end, per ok response
  std::string first_error;

  void fail(std::string what) {
    ++failed;
    if (first_error.empty()) first_error = std::move(what);
  }
};

// The ALPN list on the wire (RFC 7301): one length-prefixed name.
std::vector<unsigned char> alpn_wire(const std::string& protocol) {
  std::vector<unsigned char> wire{static_cast<unsigned char>(protocol.size())};
  wire.insert(wire.end(), protocol.begin(), protocol.end());
  return wire;
}

// A server with none of the offered protocols may end the handshake with this alert
// (nginx since 1.21.4 does): the same mismatch as choosing another one.
bool is_no_application_protocol(const boost::system::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() &&
         ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL;
}

// Why the certificate was refused (" (unable to get local issuer certificate)"), or "".
std::string verify_problem(tls_stream& stream) {
  const long result = SSL_get_verify_result(stream.native_handle());
  return result == X509_V_OK ? std::string() : std::string(" (") + X509_verify_cert_error_string(result) + ")";
}

std::string selected_protocol(tls_stream& stream) {
  const unsigned char* name = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(stream.native_handle(), &name, &length);
  return name == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(name), length);
}

asio::awaitable<void> one_request(requests_state& s) {
  tls_stream stream(co_await asio::this_coro::executor, s.tls);
  const auto start = clock::now();
  const auto connected = co_await with_deadline(stream.next_layer().async_connect(s.o.target, nothrow), connect_limit);
  if (!connected || std::get<0>(*connected))
    co_return s.fail(connected ? "connect: " + std::get<0>(*connected).message() : "connect timeout");
  // The request leaves at once instead of waiting on the ACK of the last handshake flight.
  stream.next_layer().set_option(asio::ip::tcp::no_delay(true));
  // SSL_set_tlsext_host_name without its C cast, which -Wold-style-cast rejects.
  SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(s.o.sni.c_str()));
  // The chain against --ca and the name against the certificate, as idle does, but with
  // OpenSSL's own name check: a mismatch is then reported as one ("hostname mismatch").
  stream.set_verify_mode(asio::ssl::verify_peer);
  if (SSL_set1_host(stream.native_handle(), s.o.sni.c_str()) != 1) co_return s.fail("cannot set the name to verify");
  const auto shaken = co_await with_deadline(stream.async_handshake(asio::ssl::stream_base::client, nothrow),
                                             handshake_limit);
  if (!shaken) co_return s.fail("handshake timeout");
  if (const auto ec = std::get<0>(*shaken); ec) {
    if (is_no_application_protocol(ec)) ++s.alpn_mismatch;
    co_return s.fail("handshake: " + ec.message() + verify_problem(stream));
  }
  // A server that chose nothing speaks HTTP/1.1 (RFC 7301, 3.2), as squid's bumped side does;
  // h2 is never spoken without being chosen.
  if (const auto chosen = selected_protocol(stream); chosen != s.o.alpn && !(chosen.empty() && !s.http2)) {
    ++s.alpn_mismatch;
    co_return s.fail(chosen.empty() ? "alpn: the server chose no protocol" : "alpn: the server chose " + chosen);
  }

  // Chosen before the co_await: GCC 12 builds a ?: inside a co_await's operand wrongly, and the
  // coroutine crashes once the exchange completes.
  auto exchange = s.http2 ? fetch_http2(stream, s.o.sni, s.o.path) : fetch_http1(stream, s.o.sni, s.o.path);
  const auto fetched = co_await with_deadline(std::move(exchange), exchange_limit);
  const auto done = clock::now();
  if (!fetched) co_return s.fail("response timeout");
  if (!fetched->problem.empty()) {
    if (fetched->bad_status) ++s.bad_status;
    co_return s.fail(fetched->problem);
  }
  ++s.ok;
  s.bytes += fetched->body_bytes;
  s.ok_ms.push_back(std::chrono::duration<double, std::milli>(done - start).count());
  // Then the socket closes without waiting for the server's close_notify, as browsers do.
  if (s.http2) co_await with_deadline(send_goaway(stream), goaway_limit);
}

asio::awaitable<void> worker(requests_state& s) {
  while (clock::now() < s.end) {
    ++s.attempts;
    co_await one_request(s);
  }
}

// Of values already sorted, ascending.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto at = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(at, sorted.size() - 1)];
}

void report_errors(const char* what) { std::fprintf(stderr, "bench_loadgen: %s\n", what); }

}  // namespace

int run_requests(const options& o) {
  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.load_verify_file(o.ca_file);
  // Every connection a full handshake: nothing cached to resume from, no ticket asked for.
  SSL_CTX_set_session_cache_mode(tls.native_handle(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(tls.native_handle(), SSL_OP_NO_TICKET);
  const auto wire = alpn_wire(o.alpn);
  // 0 is success here, unlike the rest of OpenSSL.
  if (SSL_CTX_set_alpn_protos(tls.native_handle(), wire.data(), static_cast<unsigned int>(wire.size())) != 0)
    throw std::runtime_error("cannot set ALPN " + o.alpn);

  requests_state s{o, tls, o.alpn == "h2", {}, 0, 0, 0, 0, 0, 0, {}, {}};
  asio::io_context io;
  const auto start = clock::now();
  s.end = start + o.duration;
  for (std::size_t i = 0; i < o.concurrency; ++i) base::spawn_session(io.get_executor(), worker(s), report_errors);
  io.run();
  const double elapsed = std::chrono::duration<double>(clock::now() - start).count();

  std::sort(s.ok_ms.begin(), s.ok_ms.end());
  // The error is printed between double quotes: none inside it.
  std::replace(s.first_error.begin(), s.first_error.end(), '"', '\'');
  std::printf("mode=requests alpn=%s attempts=%zu ok=%zu failed=%zu alpn_mismatch=%zu bad_status=%zu bytes=%zu "
              "elapsed_s=%.2f rps=%.1f p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f",
              o.alpn.c_str(), s.attempts, s.ok, s.failed, s.alpn_mismatch, s.bad_status, s.bytes, elapsed,
              static_cast<double>(s.ok) / elapsed, percentile(s.ok_ms, 0.50), percentile(s.ok_ms, 0.90),
              percentile(s.ok_ms, 0.99));
  if (!s.first_error.empty()) std::printf(" first_error=\"%s\"", s.first_error.c_str());
  std::printf("\n");
  return s.ok > 0 && s.failed == 0 ? 0 : 1;
}

}  // namespace airlock::bench

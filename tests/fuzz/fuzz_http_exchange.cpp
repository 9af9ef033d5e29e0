// libFuzzer target for an inspected connection's HTTP framing (proxy/http_message_steps.hpp):
// a request head through both parsers the exchange uses (our strict one, then Beast's, which
// frames the body), and a response head through Beast's and the checks before it may reach
// the sandbox. Input: a flags byte (bit 0: the request was HEAD for the response; bit 1: a
// credential was put on the connection), two bytes of request length, the request's bytes,
// then the response's.
//
// Properties, beyond memory safety: a request the exchange takes is framed the same way by
// both parsers (the body kind and length our parser judged are the ones Beast relays, so no
// bytes are smuggled past the judge as a second request), and its body never runs past the
// length both agreed on; a response that passes carries no credential in its headers.
#include "proxy/http_head.hpp"
#include "proxy/http_message_steps.hpp"
#include "proxy/secret_mask.hpp"
#include "record/decision.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace hh = airlock::proxy::http_head;
namespace steps = airlock::proxy::http_message_steps;

namespace {

void require(bool holds) {
  if (!holds) std::abort();
}

constexpr std::string_view credential = "Bearer tok/en-0123456789abcdef";

void request_side(std::span<const std::byte> bytes) {
  const auto parsed = hh::parse(bytes);
  beast::flat_buffer from_client;
  from_client.commit(asio::buffer_copy(from_client.prepare(bytes.size()), asio::buffer(bytes.data(), bytes.size())));
  http::request_parser<http::buffer_body> req;
  airlock::record::decision_record rec;
  const auto* head = steps::take_request_head(parsed, from_client, req, rec);
  if (head == nullptr) return;
  require(head->body != hh::body::ambiguous);
  require(req.is_header_done());
  switch (head->body) {
    case hh::body::chunked: require(req.chunked()); break;
    case hh::body::length:
      require(!req.chunked() && req.content_length() && *req.content_length() == head->content_length);
      break;
    default: require(!req.chunked() && (!req.content_length() || *req.content_length() == 0)); break;
  }
  // The body as relay_body reads it: piece by piece, never past the agreed length.
  std::array<char, 64> piece{};
  std::uint64_t body = 0;
  while (!req.is_done() && from_client.size() > 0) {
    req.get().body().data = piece.data();
    req.get().body().size = piece.size();
    boost::system::error_code ec;
    const auto used = req.put(from_client.data(), ec);
    from_client.consume(used);
    body += piece.size() - req.get().body().size;
    if (ec == http::error::need_buffer) continue;
    if (ec || used == 0) break;
  }
  if (head->body == hh::body::length) require(body <= head->content_length);
  if (head->body == hh::body::length && req.is_done()) require(body == head->content_length);
}

void response_side(std::span<const std::byte> bytes, bool head_request, bool with_credential) {
  http::response_parser<http::buffer_body> res;
  res.header_limit(static_cast<std::uint32_t>(hh::default_max_size));
  res.body_limit(boost::none);
  res.eager(false);
  if (head_request) res.skip(true);
  boost::system::error_code ec;
  res.put(asio::buffer(bytes.data(), bytes.size()), ec);
  if (!res.is_header_done()) return;
  airlock::proxy::secret_mask mask;
  if (with_credential) mask.add(credential);
  airlock::record::decision_record rec;
  auto& h = res.get().base();
  const unsigned status = h.result_int();
  (void)steps::bodiless(status, head_request);
  if (!steps::response_passes(h, status, head_request, mask, rec)) return;
  if (!with_credential) return;
  for (const auto& f : h) {
    std::string value(f.value());
    require(!mask.apply(value));  // nothing left to mask: every echo was
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const unsigned flags = data[0];
  const std::size_t request_size = std::min<std::size_t>(std::size_t{data[1]} << 8 | data[2], size - 3);
  const auto* rest = reinterpret_cast<const std::byte*>(data + 3);
  request_side({rest, request_size});
  response_side({rest + request_size, size - 3 - request_size}, flags & 1, flags & 2);
  return 0;
}

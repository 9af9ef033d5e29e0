#include "proxy/first_bytes.hpp"

#include "proxy/client_hello.hpp"
#include "proxy/http_head.hpp"

#include <algorithm>
#include <utility>
#include <variant>

namespace airlock::proxy {

using policy::reason;

sniffed failed_as(std::vector<std::byte>& bytes, reason why, sniffed::kind as) {
  sniffed s;
  s.type = as;
  s.failure = why;
  s.bytes = std::move(bytes);
  return s;
}

std::optional<sniffed> classify_first_bytes(std::vector<std::byte>& bytes, bool at_eof) {
  // Closed without a byte: nothing says what it was (not TLS, whatever the port).
  if (bytes.empty() && at_eof) return failed_as(bytes, reason::truncated);
  const auto tls = client_hello::parse(bytes);
  if (const auto* hello = std::get_if<client_hello::found>(&tls)) {
    sniffed s;
    s.type = sniffed::kind::tls;
    s.name = hello->sni;
    s.ech = hello->ech;
    s.offers_h2 = std::find(hello->alpn.begin(), hello->alpn.end(), "h2") != hello->alpn.end();
    s.bytes = std::move(bytes);
    return s;
  }
  if (const auto* bad = std::get_if<client_hello::failed>(&tls))
    return failed_as(bytes, bad->why == client_hello::error::too_large ? reason::too_large : reason::parse_error,
                     sniffed::kind::tls);
  if (std::holds_alternative<client_hello::need_more>(tls))
    return at_eof ? std::optional(failed_as(bytes, reason::truncated, sniffed::kind::tls)) : std::nullopt;

  const auto http = http_head::parse(bytes);
  if (const auto* req = std::get_if<http_head::request>(&http)) {
    sniffed s;
    s.type = sniffed::kind::http;
    s.name = req->host;
    s.port = req->port;
    s.method = req->method;
    s.absolute_form = req->absolute_form;
    s.head_size = req->head_size;
    s.bytes = std::move(bytes);
    return s;
  }
  if (const auto* bad = std::get_if<http_head::failed>(&http))
    return failed_as(bytes, bad->why == http_head::error::too_large ? reason::too_large : reason::parse_error,
                     sniffed::kind::http);
  if (std::holds_alternative<http_head::need_more>(http))
    return at_eof ? std::optional(failed_as(bytes, reason::truncated, sniffed::kind::http)) : std::nullopt;

  // Neither TLS nor HTTP: opaque TCP, judged by address alone.
  sniffed s;
  s.type = sniffed::kind::opaque;
  s.bytes = std::move(bytes);
  return s;
}

}  // namespace airlock::proxy

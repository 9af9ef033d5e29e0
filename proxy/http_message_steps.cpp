#include "proxy/http_message_steps.hpp"

#include "proxy/location.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>

#include <chrono>

namespace airlock::proxy::http_message_steps {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using policy::reason;

// RFC 9112 6.1 framing airlock forwards as it parsed it: no Transfer-Encoding, or exactly
// one whose value is "chunked", on HTTP/1.1, without Content-Length. Anything else is a
// message two parsers may frame differently (request smuggling): refused.
template <bool IsRequest>
bool plain_framing(const http::header<IsRequest>& h) {
  const auto te = h.count(http::field::transfer_encoding);
  if (te == 0) return true;
  if (te != 1 || h.version() != 11 || h.count(http::field::content_length) > 0) return false;
  return beast::iequals(h[http::field::transfer_encoding], "chunked");
}

}  // namespace

const http_head::request* take_request_head(const http_head::result& parsed, beast::flat_buffer& from_client,
                                            http::request_parser<http::buffer_body>& req,
                                            record::decision_record& rec) {
  const auto* req_head = std::get_if<http_head::request>(&parsed);
  if (req_head == nullptr) {
    const auto* f = std::get_if<http_head::failed>(&parsed);
    rec.reason = f && f->why == http_head::error::too_large ? reason::too_large : reason::parse_error;
    return nullptr;
  }
  rec.method = req_head->method;
  rec.path = req_head->target;
  rec.name = req_head->host;
  req.header_limit(static_cast<std::uint32_t>(http_head::default_max_size));
  req.body_limit(boost::none);  // bodies stream; the session's byte budget meters them
  req.eager(false);
  boost::system::error_code pec;
  req.put(asio::buffer(from_client.data().data(), req_head->head_size), pec);
  from_client.consume(req_head->head_size);
  const bool framed = !pec && req.is_header_done() && plain_framing(req.get().base()) &&
                      req_head->body != http_head::body::ambiguous;
  if (!framed) {
    rec.reason = reason::parse_error;
    if (!pec && req.is_header_done()) rec.notes.push_back("ambiguous_framing");
    return nullptr;
  }
  return req_head;
}

request_judgement judge_one(const http_head::request& req_head, const exchange_setup& x, std::uint64_t number,
                            std::string& plain_host, record::decision_record& rec) {
  const request_scope scope{x.policy, x.name, x.port, x.tls, x.upgrades, x.granted, x.connection.rule, x.cut, true};
  auto d = judge_request(req_head, scope, number, plain_host);
  if (!d.note.empty()) rec.notes.push_back(d.note);
  rec.verdict = d.verdict;
  rec.reason = d.reason;
  rec.rule = std::string(d.rule);
  return d;
}

void to_origin_form(http::request_header<>& h, const std::string& target) {
  h.target(target);
  h.erase(http::field::proxy_authorization);
  h.erase("Proxy-Connection");
}

// The `http` line of a request on this connection: the connection's shared fields.
record::decision_record request_record(const record::decision_record& connection) {
  record::decision_record rec;
  rec.event = record::event_kind::http;
  rec.session = connection.session;
  rec.client = connection.client;
  rec.dst = connection.dst;
  rec.upstream = connection.upstream;
  rec.proto = "http";  // the request's protocol; its connection's line says tls or http
  rec.conn = connection.conn;
  rec.policy = connection.policy;
  rec.policy_version = connection.policy_version;
  return rec;
}

void put_credential(http::request_header<>& h, const exchange_setup& x, const std::string& target, secret_mask& mask,
                    record::decision_record& rec) {
  const auto* cred = x.policy.credential_for(x.name, target);
  if (cred == nullptr) return;
  if (x.tls && x.destination_agrees) {
    h.erase(cred->header);
    h.set(cred->header, cred->value);
    // An echo must come back whole and plain to be masked: no compression, no ranges.
    h.set(http::field::accept_encoding, "identity");
    h.erase(http::field::range);
    h.erase(http::field::if_range);
    mask.add(cred->value);
    rec.notes.push_back("credential_injected");
  } else {
    rec.notes.push_back(x.tls ? "credential_withheld:dst_mismatch" : "credential_withheld:plaintext");
  }
}

bool expects_continue(http::request_header<>& h) {
  const auto expect = h.find(http::field::expect);
  if (expect == h.end() || !beast::iequals(expect->value(), "100-continue")) return false;
  h.erase(http::field::expect);
  return true;
}

bool bodiless(unsigned status, bool head_request) {
  return head_request || status / 100 == 1 || status == 204 || status == 304;
}

bool response_passes(http::response_header<>& h, unsigned status, bool head_request, const secret_mask& mask,
                     record::decision_record& rec) {
  if (!plain_framing(h)) {
    rec.notes.push_back("upstream_ambiguous_framing");
    return false;
  }
  if (mask.empty()) return true;
  // A compressed body could carry an echo that cannot be masked.
  const auto coding = h[http::field::content_encoding];
  if (!coding.empty() && !beast::iequals(coding, "identity") && !bodiless(status, head_request)) {
    rec.notes.push_back("encoded_response_with_credential");
    return false;
  }
  if (mask_fields(h, mask)) rec.notes.push_back("secret_masked");
  return true;
}

void follow_redirect(const http::response_header<>& h, const exchange_setup& x, record::decision_record& rec) {
  const auto& session = x.connection.session;
  if (const auto it = h.find(http::field::location); it != h.end())
    if (const auto to_target = location_host(it->value())) {
      auto to = policy::domain_name::parse(to_target->host);
      const bool https = to_target->has_scheme ? to_target->https : x.tls;
      const std::uint16_t to_port = to_target->port.value_or(https ? 443 : 80);
      if (to.has_value() && !(*to == x.name && to_port == x.port)) {
        const auto already = x.policy.decide(*to, to_port);
        if (!already.allowed()) {
          const auto now = std::chrono::steady_clock::now();
          // What the redirect's scheme speaks must be what its port carries: an allowance for
          // http://h:443/ would be plain requests where every rule has TLS.
          const auto speaks = https ? policy::port_protocol::tls : policy::port_protocol::http;
          const auto carried = policy::default_protocol(to_port);
          const auto* rule = x.policy.redirect_to(x.name, *to);
          if (rule && carried != policy::port_protocol::any && carried != speaks) {
            rule = nullptr;
            rec.notes.push_back("redirect_scheme_port_mismatch");
          }
          if (rule) {
            x.grants->grant(session, *to, x.name, rule->mark.to_string(), now, policy::redirect_grants::default_ttl,
                            to_port, speaks);
            rec.notes.push_back("redirect_granted:" + to->str());
          } else {
            x.grants->refused(session, *to, x.name, now);
            rec.notes.push_back("redirect_refused:" + to->str());
          }
        }
      }
    }
}

}  // namespace airlock::proxy::http_message_steps

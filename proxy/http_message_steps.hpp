#pragma once
// What serve_requests (proxy/http_exchange.cpp) does to one message's head, step by step:
// take a request's head from the strict parser into Beast's, judge it, rewrite it for the
// origin (origin-form, a credential, Expect taken off), and check a response's head
// (framing, an echoed credential, a redirect to follow). No I/O: each step works on a
// parsed head and writes what it found on the request's record.
#include "policy/domain_name.hpp"
#include "proxy/http_exchange.hpp"
#include "proxy/http_head.hpp"
#include "proxy/judge.hpp"
#include "proxy/secret_mask.hpp"
#include "record/decision.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>

#include <cstdint>
#include <string>

namespace airlock::proxy::http_message_steps {

// The request's head, from our strict parser (`parsed`) into `rec`, and the same bytes,
// taken out of `from_client`, through Beast's parser `req` for the body's framing. The
// request, or nullptr when it is to be refused 400 (`rec` says why): a head our strict
// parser refused, one Beast refuses, or one framed ambiguously.
const http_head::request* take_request_head(const http_head::result& parsed, boost::beast::flat_buffer& from_client,
                                            boost::beast::http::request_parser<boost::beast::http::buffer_body>& req,
                                            record::decision_record& rec);

// The `http` line of a request on a served connection: the connection's shared fields.
record::decision_record request_record(const record::decision_record& connection);

// The `number`th request judged (proxy/judge.hpp, judge_request): the connection's name,
// then the rule's methods and paths. The decision goes on `rec`.
request_judgement judge_one(const http_head::request& req_head, const exchange_setup& x, std::uint64_t number,
                            std::string& plain_host, record::decision_record& rec);

// The explicit listener's absolute-form request, as the origin gets it: in origin-form,
// without the headers meant for the proxy.
void to_origin_form(boost::beast::http::request_header<>& h, const std::string& target);

// A credential the sandbox never holds, only on a TLS connection whose name, resolution and
// destination agree, only into its own header; its value joins `mask`.
void put_credential(boost::beast::http::request_header<>& h, const exchange_setup& x, const std::string& target,
                    secret_mask& mask, record::decision_record& rec);

// True when the client waits for 100 Continue before its body (the Expect is taken off:
// airlock answers it itself, now that the request is allowed).
bool expects_continue(boost::beast::http::request_header<>& h);

// Statuses after which no body follows (RFC 9112 6.3), whatever the headers say.
bool bodiless(unsigned status, bool head_request);

// Whether a final response may go to the client, its echoed secrets masked in its headers
// (note secret_masked). False, with the note saying why, when it is answered 502 instead:
// framed ambiguously, or, on a connection that carries a credential, a body in an encoding
// that could hide an echo from the mask.
bool response_passes(boost::beast::http::response_header<>& h, unsigned status, bool head_request,
                     const secret_mask& mask, record::decision_record& rec);

// A redirect to another host that the policy does not allow already: granted a one-shot
// allowance when a redirect rule of this connection's name covers it, else refused (the
// note names the host either way; policy/redirect_grants.hpp).
void follow_redirect(const boost::beast::http::response_header<>& h, const exchange_setup& x,
                     record::decision_record& rec);

}  // namespace airlock::proxy::http_message_steps

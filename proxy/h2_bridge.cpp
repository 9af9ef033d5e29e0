#include "proxy/h2_bridge.hpp"

#include "proxy/http_head.hpp"
#include "proxy/http_message_steps.hpp"
#include "proxy/judge.hpp"
#include "proxy/refusal_text.hpp"
#include "record/decision_line.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/message.hpp>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

namespace airlock::proxy {

namespace http = boost::beast::http;
using policy::reason;
using policy::verdict;

namespace {

using header_list = std::vector<std::pair<std::string, std::string>>;

// Headers HTTP/2 forbids (RFC 9113 8.2.2), which an HTTP/1.1-shaped step may have added.
bool connection_specific(std::string_view name) {
  for (std::string_view n : {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"})
    if (name == n) return true;
  return false;
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

// Name-value pairs as nghttp2 takes them; it copies them in every submit call.
class nv_list {
 public:
  void add(std::string name, std::string value) {
    names_.push_back(std::move(name));
    values_.push_back(std::move(value));
  }
  std::vector<nghttp2_nv>& build() {
    nv_.clear();
    for (std::size_t i = 0; i < names_.size(); ++i)
      nv_.push_back(nghttp2_nv{reinterpret_cast<std::uint8_t*>(names_[i].data()),
                               reinterpret_cast<std::uint8_t*>(values_[i].data()), names_[i].size(), values_[i].size(),
                               NGHTTP2_NV_FLAG_NONE});
    return nv_;
  }

 private:
  std::vector<std::string> names_, values_;
  std::vector<nghttp2_nv> nv_;
};

template <bool IsRequest>
void add_fields(nv_list& out, const http::header<IsRequest>& h) {
  for (const auto& f : h) {
    auto name = lowercase(f.name_string());
    if (!connection_specific(name)) out.add(std::move(name), std::string(f.value()));
  }
}

// "host[:port]" of :authority (brackets around an IPv6 address taken off), as the HTTP/1
// head parser gives Host.
void split_authority(std::string_view a, http_head::request& r) {
  std::string_view host = a;
  if (a.starts_with('[')) {
    const auto close = a.find(']');
    host = a.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1);
    a = close == std::string_view::npos ? std::string_view() : a.substr(close + 1);
  } else if (const auto colon = a.rfind(':'); colon != std::string_view::npos) {
    host = a.substr(0, colon);
    a = a.substr(colon);
  } else {
    a = {};
  }
  r.host = std::string(host);
  if (a.starts_with(':') && a.size() > 1 && a.size() <= 6) {
    unsigned port = 0;
    for (char c : a.substr(1)) port = c >= '0' && c <= '9' ? port * 10 + static_cast<unsigned>(c - '0') : 70000;
    if (port > 0 && port < 65536) r.port = static_cast<std::uint16_t>(port);
  }
}

}  // namespace

struct h2_bridge::stream {
  std::int32_t down_id = 0;
  std::int32_t up_id = 0;  // 0: not opened towards the origin (or closed there)
  record::decision_record rec;
  std::optional<record::decision_line> line;
  // The request, as the sandbox sent it.
  std::string method, path, authority, scheme, protocol;
  std::optional<std::string> host;  // a Host field beside (or instead of) :authority
  bool hosts = false;               // more than one Host field
  header_list headers, trailers;
  std::size_t header_bytes = 0;
  bool request_ended = false;
  std::string up_pending;  // request body bytes the origin has not taken yet
  // The response.
  unsigned status = 0;
  bool final_seen = false;  // a final (non-1xx) response head came
  header_list response, response_trailers;
  std::size_t response_bytes = 0;
  bool response_sent = false;  // submitted to the sandbox
  bool response_ended = false;
  std::string down_pending;  // response body bytes, masked, the sandbox has not taken yet
  bool head_request = false;
  bool websocket = false;  // an extended CONNECT to a WebSocket, allowed
  // Airlock's own answer instead of the origin's (a refusal).
  bool refused = false;
  std::string own_body;
  std::uint64_t up = 0, down = 0;  // body bytes forwarded each way
};

// The nghttp2 callbacks, one set for both sides; user_data is the side (h2_bridge::side).
struct h2_callbacks {
  static h2_bridge& of(void* user) { return *static_cast<h2_bridge::side*>(user)->bridge; }
  static bool down(void* user) { return static_cast<h2_bridge::side*>(user)->down; }

  static int begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto& b = of(user);
    if (frame->hd.type != NGHTTP2_HEADERS || !down(user) || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto s = std::make_unique<h2_bridge::stream>();
    s->down_id = frame->hd.stream_id;
    s->rec = http_message_steps::request_record(b.x_.connection);
    s->rec.notes.push_back("h2");
    s->rec.notes.push_back("stream:" + std::to_string(s->down_id));
    s->line.emplace(b.x_.log, s->rec, record::decision_line::timing::at_exit);
    b.streams_[s->down_id] = std::move(s);
    return 0;
  }

  static int header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* n, std::size_t nlen,
                    const std::uint8_t* v, std::size_t vlen, std::uint8_t, void* user) {
    auto& b = of(user);
    const bool from_sandbox = down(user);
    auto* s = from_sandbox ? b.from_down(frame->hd.stream_id) : b.from_up(frame->hd.stream_id);
    if (s == nullptr) return 0;
    const std::string_view name(reinterpret_cast<const char*>(n), nlen);
    std::string value(reinterpret_cast<const char*>(v), vlen);
    // A header block is bounded as it is decoded (an HPACK bomb decodes into this).
    auto& size = from_sandbox ? s->header_bytes : s->response_bytes;
    size += nlen + vlen + 32;
    if (size > b.limits_.header_list) {
      if (from_sandbox) {
        s->rec.verdict = verdict::deny;
        s->rec.reason = reason::too_large;
        s->rec.notes.push_back("header_list_too_large");
      } else {
        s->rec.notes.push_back("upstream_header_list_too_large");
      }
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // that stream is reset
    }
    if (from_sandbox) {
      if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) s->trailers.emplace_back(name, std::move(value));
      else if (name == ":method") s->method = std::move(value);
      else if (name == ":path") s->path = std::move(value);
      else if (name == ":authority") s->authority = std::move(value);
      else if (name == ":scheme") s->scheme = std::move(value);
      else if (name == ":protocol") s->protocol = std::move(value);
      else if (name != "host") s->headers.emplace_back(name, std::move(value));
      else {
        if (s->host) s->hosts = true;
        s->host = std::move(value);
      }
    } else if (!s->final_seen) {
      if (name == ":status") {
        s->status = 0;
        for (char c : value) s->status = s->status * 10 + static_cast<unsigned>(c - '0');
      } else if (!name.starts_with(':')) {
        s->response.emplace_back(name, std::move(value));
      }
    } else {
      s->response_trailers.emplace_back(name, std::move(value));
    }
    return 0;
  }

  static int frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    auto& b = of(user);
    const bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (!down(user) && frame->hd.type == NGHTTP2_SETTINGS && (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0)
      b.origin_settings();
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    if (down(user)) {
      auto* s = b.from_down(frame->hd.stream_id);
      if (s == nullptr) return 0;
      if (ends) s->request_ended = true;
      if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) b.request_complete(*s);
      else if (ends && s->up_id != 0) nghttp2_session_resume_data(b.up_.s, s->up_id);
      return 0;
    }
    auto* s = b.from_up(frame->hd.stream_id);
    if (s == nullptr) return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && !s->final_seen) {
      if (s->status < 200) {  // an interim response (100, 103): not passed on
        s->status = 0;
        s->response.clear();
        s->response_bytes = 0;
        return 0;
      }
      s->final_seen = true;
      if (ends) s->response_ended = true;
      b.response_head(*s);
      return 0;
    }
    if (ends) {
      s->response_ended = true;
      if (s->response_sent) nghttp2_session_resume_data(b.down_.s, s->down_id);
    }
    return 0;
  }

  static int data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                        std::size_t len, void* user) {
    auto& b = of(user);
    const char* bytes = reinterpret_cast<const char*>(data);
    if (down(user)) {
      auto* s = b.from_down(id);
      if (s == nullptr || s->refused || s->up_id == 0) {
        nghttp2_session_consume(session, id, len);  // nobody takes them: the window stays open
        return 0;
      }
      s->up_pending.append(bytes, len);
      nghttp2_session_resume_data(b.up_.s, s->up_id);
      return 0;
    }
    auto* s = b.from_up(id);
    if (s == nullptr || s->refused) {
      nghttp2_session_consume(session, id, len);
      return 0;
    }
    s->down_pending.append(bytes, len);
    b.mask_.apply(s->down_pending);
    if (s->response_sent) nghttp2_session_resume_data(b.down_.s, s->down_id);
    return 0;
  }

  static int stream_close(nghttp2_session*, std::int32_t id, std::uint32_t error_code, void* user) {
    auto& b = of(user);
    if (down(user)) b.close_down(id, error_code);
    else b.close_up(id, error_code);
    return 0;
  }

  // The request body, to the origin.
  static ssize_t read_up(nghttp2_session* session, std::int32_t id, std::uint8_t* buf, std::size_t length,
                         std::uint32_t* flags, nghttp2_data_source*, void* user) {
    auto& b = of(user);
    auto* s = b.from_up(id);
    if (s == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    const std::size_t n = std::min(length, s->up_pending.size());
    std::memcpy(buf, s->up_pending.data(), n);
    s->up_pending.erase(0, n);
    if (n > 0) {
      nghttp2_session_consume(b.down_.s, s->down_id, n);
      s->up += n;
      b.spend(true, n);
    }
    if (s->up_pending.empty() && s->request_ended) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      if (!s->trailers.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nv_list t;
        for (auto& [k, v] : s->trailers) t.add(k, v);
        auto& nv = t.build();
        nghttp2_submit_trailer(session, id, nv.data(), nv.size());
      }
    } else if (n == 0) {
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(n);
  }

  // The response body (the origin's, masked, or airlock's own), to the sandbox.
  static ssize_t read_down(nghttp2_session* session, std::int32_t id, std::uint8_t* buf, std::size_t length,
                           std::uint32_t* flags, nghttp2_data_source*, void* user) {
    auto& b = of(user);
    auto* s = b.from_down(id);
    if (s == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (s->refused) {
      const std::size_t n = std::min(length, s->own_body.size());
      std::memcpy(buf, s->own_body.data(), n);
      s->own_body.erase(0, n);
      if (s->own_body.empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(n);
    }
    // The tail of what came may be the start of a secret: held back until more comes.
    const std::size_t hold = s->response_ended ? 0 : b.mask_.hold();
    const std::size_t ready = s->down_pending.size() > hold ? s->down_pending.size() - hold : 0;
    const std::size_t n = std::min(length, ready);
    std::memcpy(buf, s->down_pending.data(), n);
    s->down_pending.erase(0, n);
    if (n > 0) {
      if (s->up_id != 0) nghttp2_session_consume(b.up_.s, s->up_id, n);
      s->down += n;
      b.spend(false, n);
    }
    if (s->down_pending.empty() && s->response_ended) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      if (!s->response_trailers.empty()) {
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nv_list t;
        for (auto& [k, v] : s->response_trailers) {
          std::string masked = v;
          b.mask_.apply(masked);
          t.add(k, std::move(masked));
        }
        auto& nv = t.build();
        nghttp2_submit_trailer(session, id, nv.data(), nv.size());
      }
    } else if (n == 0) {
      return NGHTTP2_ERR_DEFERRED;
    }
    return static_cast<ssize_t>(n);
  }
};

h2_bridge::session_ptr::~session_ptr() {
  if (s != nullptr) nghttp2_session_del(s);
}

namespace {

struct options {
  nghttp2_option* o = nullptr;
  options() { nghttp2_option_new(&o); }
  ~options() { nghttp2_option_del(o); }
};

struct callbacks {
  nghttp2_session_callbacks* c = nullptr;
  callbacks() {
    nghttp2_session_callbacks_new(&c);
    nghttp2_session_callbacks_set_on_begin_headers_callback(c, &h2_callbacks::begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(c, &h2_callbacks::header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, &h2_callbacks::frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, &h2_callbacks::data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, &h2_callbacks::stream_close);
  }
  ~callbacks() { nghttp2_session_callbacks_del(c); }
};

}  // namespace

h2_bridge::h2_bridge(exchange_setup& x, limits l) : x_(x), limits_(l) {
  // The sides outlive the sessions: members of the bridge.
  sides_[0] = {this, true};
  sides_[1] = {this, false};
  callbacks cb;
  options opt;
  nghttp2_option_set_no_auto_window_update(opt.o, 1);
  nghttp2_option_set_max_settings(opt.o, limits_.settings_entries);
  nghttp2_option_set_max_outbound_ack(opt.o, limits_.queued_acks);
  nghttp2_option_set_max_continuations(opt.o, limits_.continuations);
  nghttp2_option_set_stream_reset_rate_limit(opt.o, limits_.reset_burst, limits_.reset_rate);
  nghttp2_session_server_new2(&down_.s, cb.c, &sides_[0], opt.o);
  nghttp2_session_client_new2(&up_.s, cb.c, &sides_[1], opt.o);

  const nghttp2_settings_entry to_sandbox[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limits_.concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits_.stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(limits_.header_list)},
  };
  nghttp2_submit_settings(down_.s, NGHTTP2_FLAG_NONE, to_sandbox, std::size(to_sandbox));
  const nghttp2_settings_entry to_origin[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, limits_.stream_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(limits_.header_list)},
  };
  nghttp2_submit_settings(up_.s, NGHTTP2_FLAG_NONE, to_origin, std::size(to_origin));
  for (auto* s : {down_.s, up_.s})
    nghttp2_session_set_local_window_size(s, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<std::int32_t>(limits_.connection_window));
}

h2_bridge::~h2_bridge() { end(); }

void h2_bridge::end() {
  // Streams the connection ended under: their lines leave now.
  for (auto& [id, s] : streams_) {
    s->rec.bytes_up = s->up;
    s->rec.bytes_down = s->down;
    totals_.up += s->up;
    totals_.down += s->down;
    ++totals_.requests;
    if (!s->response_ended && !s->refused) s->rec.notes.push_back("connection_ended");
  }
  streams_.clear();
  by_up_.clear();
}

h2_bridge::stream* h2_bridge::from_down(std::int32_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second.get();
}

h2_bridge::stream* h2_bridge::from_up(std::int32_t id) {
  auto it = by_up_.find(id);
  return it == by_up_.end() ? nullptr : from_down(it->second);
}

void h2_bridge::request_complete(stream& s) {
  auto& rec = s.rec;
  rec.method = s.method;
  rec.path = s.path;
  http_head::request r;
  // An extended CONNECT (RFC 8441) is the upgrade of HTTP/1.1 in HTTP/2's words: judged as
  // that GET with its Upgrade (:protocol), so a WebSocket is judged by host, path and method.
  const bool extended_connect = s.method == "CONNECT" && !s.protocol.empty();
  r.method = extended_connect ? "GET" : s.method;
  r.target = s.path;
  r.upgrade = s.protocol;
  // The origin is told one name, the one judged: a Host field may stand in for :authority
  // (RFC 9113, 8.3.1) but not differ from it, or an origin routing by Host would be reached
  // under a name airlock never judged.
  if (s.authority.empty() && s.host) s.authority = *s.host;
  split_authority(s.authority, r);
  rec.name = r.host;
  s.head_request = s.method == "HEAD";
  if (s.rec.reason == reason::too_large) return;  // reset already
  if (s.hosts || (s.host && !boost::beast::iequals(*s.host, s.authority))) {
    rec.verdict = verdict::deny;
    rec.reason = reason::parse_error;
    rec.notes.push_back("host_differs_from_authority");
    refuse(s, 400);
    return;
  }
  std::string plain_host;
  const auto d = http_message_steps::judge_one(r, x_, judged_++, plain_host, rec);
  if (d.verdict == verdict::deny) {
    // Another host (coalescing, or fronting on the first stream) goes to a connection of
    // its own: 421, whichever it is.
    const bool elsewhere = d.reason == reason::misdirected || d.reason == reason::sni_host_mismatch;
    refuse(s, elsewhere ? 421 : d.refusal);
    return;
  }
  if (!x_.log_allowed && !d.switching) s.line->cancel();

  // What the origin gets: the request's own headers, with a credential.
  http::request_header<> h;
  for (const auto& [k, v] : s.headers) h.insert(k, v);
  http_message_steps::put_credential(h, x_, s.path, mask_, rec);
  if (d.websocket && !mask_.empty()) {
    // Its frames pass unread: an echo of the credential could not be masked.
    rec.verdict = verdict::deny;
    rec.reason = reason::protocol_not_allowed;
    rec.notes.push_back("websocket_with_credential");
    refuse(s, 403);
    return;
  }
  s.websocket = d.websocket;
  nv_list nv;
  nv.add(":method", s.method);
  if (extended_connect) nv.add(":protocol", s.protocol);
  nv.add(":scheme", s.scheme.empty() ? "https" : s.scheme);
  nv.add(":authority", s.authority);
  nv.add(":path", s.path);
  add_fields(nv, h);
  auto& list = nv.build();
  nghttp2_data_provider body{};
  body.read_callback = &h2_callbacks::read_up;
  const auto id = nghttp2_submit_request(up_.s, nullptr, list.data(), list.size(), s.request_ended ? nullptr : &body,
                                         nullptr);
  if (id < 0) {
    rec.notes.push_back("upstream_refused_stream");
    refuse(s, 502);
    return;
  }
  s.up_id = id;
  by_up_[id] = s.down_id;
}

void h2_bridge::response_head(stream& s) {
  auto& rec = s.rec;
  rec.status = s.status;
  http::response_header<> h;
  h.result(s.status);
  for (const auto& [k, v] : s.response) h.insert(k, v);
  if (!http_message_steps::response_passes(h, s.status, s.head_request, mask_, rec)) {
    nghttp2_submit_rst_stream(up_.s, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
    refuse(s, 502);
    return;
  }
  if (s.status >= 300 && s.status < 400 && x_.grants != nullptr) http_message_steps::follow_redirect(h, x_, rec);
  nv_list nv;
  nv.add(":status", std::to_string(s.status));
  add_fields(nv, h);
  auto& list = nv.build();
  nghttp2_data_provider body{};
  body.read_callback = &h2_callbacks::read_down;
  const bool bodiless = s.response_ended && s.down_pending.empty();
  nghttp2_submit_response(down_.s, s.down_id, list.data(), list.size(), bodiless ? nullptr : &body);
  s.response_sent = true;
  if (s.websocket && s.status / 100 == 2) {
    // The switch: its line leaves now, as HTTP/1.1's at its 101; the frames that follow are
    // counted in the connection's close line.
    rec.notes.push_back("upgraded");
    rec.notes.push_back("websocket");
    s.line->decide();
    s.line->cancel();
  }
}

void h2_bridge::origin_settings() {
  // Extended CONNECT is offered to the sandbox only when the origin takes it too.
  if (connect_offered_ || nghttp2_session_get_remote_settings(up_.s, NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL) != 1)
    return;
  connect_offered_ = true;
  const nghttp2_settings_entry enable{NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1};
  nghttp2_submit_settings(down_.s, NGHTTP2_FLAG_NONE, &enable, 1);
}

void h2_bridge::refuse(stream& s, unsigned status) {
  if (s.response_sent) {
    nghttp2_submit_rst_stream(down_.s, NGHTTP2_FLAG_NONE, s.down_id, NGHTTP2_INTERNAL_ERROR);
    return;
  }
  s.refused = true;
  s.rec.status = status;
  s.own_body = steps::refusal_body(s.rec);
  s.down_pending.clear();
  nv_list nv;
  nv.add(":status", std::to_string(status));
  nv.add("content-type", "application/json");
  nv.add("x-airlock-reason", std::string(policy::to_string(s.rec.reason)));
  nv.add("content-length", std::to_string(s.own_body.size()));
  auto& list = nv.build();
  nghttp2_data_provider body{};
  body.read_callback = &h2_callbacks::read_down;
  nghttp2_submit_response(down_.s, s.down_id, list.data(), list.size(), &body);
  s.response_sent = true;
  if (s.up_id != 0) {
    nghttp2_submit_rst_stream(up_.s, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
    by_up_.erase(s.up_id);
    s.up_id = 0;
  }
}

void h2_bridge::close_down(std::int32_t id, std::uint32_t error_code) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  auto& s = *it->second;
  if (s.up_id != 0) {
    // The sandbox is done with it (or reset it): so is the origin.
    if (!s.response_ended) nghttp2_submit_rst_stream(up_.s, NGHTTP2_FLAG_NONE, s.up_id, NGHTTP2_CANCEL);
    by_up_.erase(s.up_id);
  }
  if (error_code != NGHTTP2_NO_ERROR && !s.refused) s.rec.notes.push_back("client_reset");
  s.rec.bytes_up = s.up;
  s.rec.bytes_down = s.down;
  totals_.up += s.up;
  totals_.down += s.down;
  ++totals_.requests;
  streams_.erase(it);  // its line leaves now
}

void h2_bridge::close_up(std::int32_t id, std::uint32_t error_code) {
  auto* s = from_up(id);
  by_up_.erase(id);
  if (s == nullptr) return;
  s->up_id = 0;
  if (s->response_ended && error_code == NGHTTP2_NO_ERROR) return;
  s->rec.notes.push_back(error_code == NGHTTP2_NO_ERROR ? "upstream_closed" : "upstream_reset");
  if (!s->response_sent) refuse(*s, 502);
  else nghttp2_submit_rst_stream(down_.s, NGHTTP2_FLAG_NONE, s->down_id, NGHTTP2_INTERNAL_ERROR);
}

void h2_bridge::spend(bool up, std::size_t n) {
  if (totals_.cut || x_.ticket.moved(up, n)) return;
  // A session's byte budget is spent: the connection ends, every open stream with it.
  totals_.cut = true;
  for (auto& [id, s] : streams_) record::mark_cut(s->rec, x_.ticket.spent());
  nghttp2_session_terminate_session(down_.s, NGHTTP2_ENHANCE_YOUR_CALM);
  nghttp2_session_terminate_session(up_.s, NGHTTP2_CANCEL);
}

bool h2_bridge::from_client(std::span<const std::byte> bytes) {
  const auto n = nghttp2_session_mem_recv(down_.s, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (n < 0) {
    // A protocol error or a bound: nghttp2 has queued its GOAWAY; the origin's side ends too.
    broken_ = true;
    failure_ = "h2_client_error:" + std::string(nghttp2_strerror(static_cast<int>(n)));
    client_gone();
    return false;
  }
  return true;
}

bool h2_bridge::from_upstream(std::span<const std::byte> bytes) {
  const auto n = nghttp2_session_mem_recv(up_.s, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (n < 0) {
    failure_ = "h2_upstream_error:" + std::string(nghttp2_strerror(static_cast<int>(n)));
    upstream_gone();
    return false;
  }
  return true;
}

void h2_bridge::drain(nghttp2_session* s, std::string& out) {
  // Frames coalesced into one write, up to a bound (the peer's window bounds the rest).
  while (out.size() < 256 * 1024) {
    const std::uint8_t* data = nullptr;
    const auto n = nghttp2_session_mem_send(s, &data);
    if (n <= 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
}

void h2_bridge::to_client(std::string& out) { drain(down_.s, out); }
void h2_bridge::to_upstream(std::string& out) { drain(up_.s, out); }

void h2_bridge::client_gone() {
  for (auto& [id, s] : streams_)
    if (s->up_id != 0 && !s->response_ended) s->rec.notes.push_back("client_gone");
  nghttp2_session_terminate_session(up_.s, NGHTTP2_CANCEL);
  if (!broken_) nghttp2_session_terminate_session(down_.s, NGHTTP2_NO_ERROR);
}

void h2_bridge::upstream_gone() {
  // What has no answer yet gets airlock's; then the sandbox is told to go elsewhere.
  for (auto& [id, s] : streams_) {
    if (s->refused || s->response_ended) continue;
    s->rec.notes.push_back("upstream_closed");
    s->up_id = 0;
    refuse(*s, 502);
  }
  by_up_.clear();
  nghttp2_session_terminate_session(up_.s, NGHTTP2_NO_ERROR);
  nghttp2_submit_goaway(down_.s, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(down_.s), NGHTTP2_NO_ERROR,
                        nullptr, 0);
}

bool h2_bridge::done() const {
  const bool down_over = nghttp2_session_want_read(down_.s) == 0 && nghttp2_session_want_write(down_.s) == 0;
  const bool up_quiet = nghttp2_session_want_write(up_.s) == 0;
  return down_over && up_quiet;
}

}  // namespace airlock::proxy

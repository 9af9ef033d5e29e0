#pragma once
// HTTP/2 on both sides of an inspected connection, without I/O: what the sandbox sent goes
// in (from_client), what is for the origin comes out (to_upstream), and the same the other
// way; proxy/h2_exchange.cpp moves the bytes. Two nghttp2 sessions: a server facing the
// sandbox, a client facing the origin.
//
// Every stream the sandbox opens is judged as an HTTP/1.1 request is (proxy/judge.hpp,
// judge_request): its :authority must name the connection's (the SNI's) host, else the
// stream gets 421 and is never coalesced onto this connection; :method and :path against
// the rule's methods and paths, with the same ambiguity rules. Only an allowed stream is
// opened towards the origin, with its credential under the same binding checks; its
// response is checked as HTTP/1.1's (an echoed credential masked in headers and body, an
// encoding that could hide one refused, a redirect's one-shot grant), and the stream gets
// one `http` line, with its stream id, when it ends.
//
// Flow control runs end to end: a stream's bytes are acknowledged (WINDOW_UPDATE) to the
// side that sent them only once the other side took them, so a slow reader slows its
// writer, and no stream holds more than a window. The known HTTP/2 attacks are bounded
// here: concurrent streams, header list size (an HPACK bomb decodes into it), CONTINUATION
// frames per header block, SETTINGS entries and the acknowledgements a peer that does not
// read makes airlock queue (SETTINGS and PING floods), and the rate of stream resets (rapid
// reset); past a bound the stream is reset or the connection ends with GOAWAY.
#include "proxy/http_exchange.hpp"
#include "proxy/secret_mask.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>

struct nghttp2_session;

namespace airlock::proxy {

class h2_bridge {
 public:
  struct limits {
    std::uint32_t concurrent_streams = 100;      // SETTINGS_MAX_CONCURRENT_STREAMS to the sandbox
    std::uint32_t stream_window = 65535;         // each stream's receive window, both sides
    std::uint32_t connection_window = 1u << 20;  // the connection's, both sides
    std::size_t header_list = 64 * 1024;         // a header block, decoded (name + value + 32 each)
    std::size_t continuations = 8;               // CONTINUATION frames after one HEADERS
    std::size_t settings_entries = 32;           // in one SETTINGS frame
    std::size_t queued_acks = 100;               // SETTINGS and PING acknowledgements not yet sent
    std::uint64_t reset_burst = 100;             // stream resets from the sandbox: a burst,
    std::uint64_t reset_rate = 10;               //  then this many a second
  };

  explicit h2_bridge(exchange_setup& x) : h2_bridge(x, limits{}) {}
  h2_bridge(exchange_setup& x, limits l);
  ~h2_bridge();
  h2_bridge(const h2_bridge&) = delete;
  h2_bridge& operator=(const h2_bridge&) = delete;

  // Bytes each side sent. False: that side broke the protocol or a bound (the connection is
  // over; what is left to send is its GOAWAY).
  bool from_client(std::span<const std::byte> bytes);
  bool from_upstream(std::span<const std::byte> bytes);
  // What is to be sent next to each side, appended to `out` (nothing: nothing now).
  void to_client(std::string& out);
  void to_upstream(std::string& out);

  // One side's connection ended (closed, reset, idle): the other side's streams end too.
  void client_gone();
  void upstream_gone();
  // Neither session wants to read or write any more: the exchange is over.
  bool done() const;
  // The exchange is over: streams still open end here (their lines leave, their bytes are
  // counted in totals()).
  void end();

  const exchange_totals& totals() const noexcept { return totals_; }
  // Why a side's session ended on an error, for the connection's close line ("" if none).
  const std::string& failure() const noexcept { return failure_; }

 private:
  struct stream;
  // What each session's callbacks are handed: the bridge, and which side they are on.
  struct side {
    h2_bridge* bridge;
    bool down;  // the sandbox's side
  };
  struct session_ptr {
    nghttp2_session* s = nullptr;
    ~session_ptr();
  };
  friend struct h2_callbacks;

  // What the callbacks do (h2_bridge.cpp).
  stream* from_down(std::int32_t id);
  stream* from_up(std::int32_t id);
  void request_complete(stream& s);
  void response_head(stream& s);
  void origin_settings();
  void refuse(stream& s, unsigned status);
  void close_down(std::int32_t id, std::uint32_t error_code);
  void close_up(std::int32_t id, std::uint32_t error_code);
  void spend(bool up, std::size_t n);
  void drain(nghttp2_session* s, std::string& out);

  exchange_setup& x_;
  const limits limits_;
  side sides_[2];
  secret_mask mask_;  // every credential put on this connection's requests
  exchange_totals totals_;
  session_ptr down_;                                         // the sandbox's side (server)
  session_ptr up_;                                           // the origin's side (client)
  std::map<std::int32_t, std::unique_ptr<stream>> streams_;  // by the sandbox's stream id
  std::map<std::int32_t, std::int32_t> by_up_;               // origin's stream id -> sandbox's
  std::uint64_t judged_ = 0;                                 // streams judged so far
  bool broken_ = false;
  bool connect_offered_ = false;  // SETTINGS_ENABLE_CONNECT_PROTOCOL sent to the sandbox
  std::string failure_;
};

}  // namespace airlock::proxy

#pragma once
// The requests a client sends on a plain-HTTP connection that airlock relays as bytes:
// sans-I/O, fed what each read brought. Every request head is parsed (http_head) and
// handed to a judge before any byte of it goes on; its body is framed (Content-Length, or
// chunked_body) and passes as it comes, so the next head is found wherever it starts:
// kept alive, pipelined, or split across reads. A head is held back until it is whole (at
// most http_head's cap); nothing after a refused head ever goes on.
//
// Only the request direction is read. The answers go back as bytes: their framing decides
// nothing airlock judges unless a rule follows redirects or logs each request, and those
// connections are served instead (proxy/http_exchange.hpp).
#include "proxy/chunked_body.hpp"
#include "proxy/http_head.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace airlock::proxy {

class request_gate {
 public:
  // Why bytes are no request airlock can frame.
  enum class unframed { malformed_head, head_too_large, ambiguous_framing, malformed_chunk };

  class judge {
   public:
    virtual ~judge() = default;
    // A whole head, the `number`th (0: the first): 0 lets it and its body through, else
    // the status of its refusal.
    virtual unsigned request(const http_head::request& r, std::uint64_t number) = 0;
    // Bytes where the `number`th request should be that cannot be framed: the refusal's
    // status. `head`: the request whose framing is ambiguous (else none was parsed).
    virtual unsigned refuse(unframed why, const http_head::request* head, std::uint64_t number) = 0;
  };

  explicit request_gate(judge& j) noexcept : judge_(j) {}
  request_gate(const request_gate&) = delete;
  request_gate& operator=(const request_gate&) = delete;

  // What may go on now of the bytes read so far, `read` the latest: in order, a span of
  // `read` or of bytes the gate held back, valid until passed(). What comes after it is
  // held (a head not yet whole) or dropped (refused()).
  std::span<const std::byte> admit(std::span<const std::byte> read);
  // What admit() returned went on.
  void passed() noexcept;

  // Non-zero once a request was refused: its status. Nothing more is admitted.
  unsigned refused() const noexcept { return refused_; }
  // Heads let through.
  std::uint64_t requests() const noexcept { return requests_; }
  // A request has begun and not ended (a head held back, or a body still to come).
  bool mid_request() const noexcept { return !held_.empty() || part_ != part::head; }

 private:
  enum class part : std::uint8_t { head, length, chunked };
  // Walks `bytes` (held and new) from the start: how many may go on.
  std::size_t walk(std::span<const std::byte> bytes);

  judge& judge_;
  part part_ = part::head;
  std::uint64_t left_ = 0;  // part::length: body bytes still to come
  chunked_body chunks_;
  std::string held_;               // bytes read and not yet passed: a head's start, or all that admit() returned
  std::size_t released_held_ = 0;  // of held_, the front admit() returned
  std::uint64_t requests_ = 0;
  unsigned refused_ = 0;
};

}  // namespace airlock::proxy

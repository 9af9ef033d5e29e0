// HTTP/2 for requests mode: the least a client must do to fetch one page on a fresh
// connection (RFC 9113, RFC 7541), written out by hand rather than with nghttp2 so the
// client's share of the CPU stays small and fixed next to the proxy's. The request uses
// only static-table indexes and plain literals, so no HPACK state is kept; of the response
// only :status is decoded, and the rest of its header block is skipped.
#include "base/deadline.hpp"
#include "bench/loadgen/fetch.hpp"

#include <boost/asio/write.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace airlock::bench {

namespace {

namespace asio = boost::asio;
using base::nothrow;
using bytes = std::vector<std::uint8_t>;

enum class frame_type : std::uint8_t {
  data = 0,
  headers = 1,
  priority = 2,
  rst_stream = 3,
  settings = 4,
  push_promise = 5,
  ping = 6,
  goaway = 7,
  window_update = 8,
  continuation = 9,
};

constexpr std::uint8_t flag_end_stream = 0x1;
constexpr std::uint8_t flag_ack = 0x1;  // on SETTINGS and PING
constexpr std::uint8_t flag_end_headers = 0x4;
constexpr std::uint8_t flag_padded = 0x8;
constexpr std::uint8_t flag_priority = 0x20;

constexpr std::size_t frame_header_size = 9;
// SETTINGS_MAX_FRAME_SIZE's initial value; this client never raises it, so no peer may exceed it.
constexpr std::size_t max_frame = 16384;
// DATA received beyond this since the last WINDOW_UPDATE is given back, on the connection and
// the stream: half the initial 64 KiB window, so a page of any size keeps flowing.
constexpr std::size_t window_refill = 32 * 1024;
constexpr std::uint32_t stream_id = 1;
constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void put_u16(bytes& out, std::uint32_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

void put_u32(bytes& out, std::uint32_t v) {
  put_u16(out, v >> 16);
  put_u16(out, v & 0xffff);
}

std::uint32_t get_u32(std::span<const std::uint8_t> in) {
  return std::uint32_t{in[0]} << 24 | std::uint32_t{in[1]} << 16 | std::uint32_t{in[2]} << 8 | in[3];
}

void put_frame_header(bytes& out, std::size_t length, frame_type type, std::uint8_t flags, std::uint32_t stream) {
  out.push_back(static_cast<std::uint8_t>(length >> 16));
  put_u16(out, static_cast<std::uint32_t>(length & 0xffff));
  out.push_back(static_cast<std::uint8_t>(type));
  out.push_back(flags);
  put_u32(out, stream);
}

// RFC 7541 5.1: `value` in a `prefix_bits` prefix, under the representation's own high bits.
void put_hpack_int(bytes& out, std::uint8_t high_bits, unsigned prefix_bits, std::size_t value) {
  const std::size_t max_prefix = (std::size_t{1} << prefix_bits) - 1;
  if (value < max_prefix) {
    out.push_back(static_cast<std::uint8_t>(high_bits | value));
    return;
  }
  out.push_back(static_cast<std::uint8_t>(high_bits | max_prefix));
  for (value -= max_prefix; value >= 128; value /= 128) out.push_back(static_cast<std::uint8_t>(value % 128 + 128));
  out.push_back(static_cast<std::uint8_t>(value));
}

// nullopt if the integer is cut short or larger than any header block could need.
std::optional<std::size_t> get_hpack_int(std::span<const std::uint8_t> in, std::size_t& at, unsigned prefix_bits) {
  if (at >= in.size()) return std::nullopt;
  const std::size_t max_prefix = (std::size_t{1} << prefix_bits) - 1;
  std::size_t value = in[at++] & max_prefix;
  if (value < max_prefix) return value;
  for (unsigned shift = 0; shift < 28; shift += 7) {
    if (at >= in.size()) return std::nullopt;
    const std::uint8_t b = in[at++];
    value += std::size_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return value;
  }
  return std::nullopt;
}

// RFC 7541 6.2.2, literal header field without indexing, with an indexed name and a plain
// (not Huffman-coded) value: the server's decoder adds nothing to its table.
void put_literal(bytes& out, std::size_t name_index, std::string_view value) {
  put_hpack_int(out, 0x00, 4, name_index);
  put_hpack_int(out, 0x00, 7, value.size());
  out.insert(out.end(), value.begin(), value.end());
}

// Everything the client says before the first answer, as one write (one TLS record): the
// preface, SETTINGS with ENABLE_PUSH=0 (the server opens no stream of its own), and the
// request as a HEADERS frame that also ends the stream. Empty if the request does not fit
// in one frame.
bytes first_flight(const std::string& host, const std::string& path) {
  bytes block{0x82, 0x87};      // static entries 2 and 7: :method GET, :scheme https
  put_literal(block, 4, path);  // :path
  put_literal(block, 1, host);  // :authority
  if (block.size() > max_frame) return {};
  bytes out(preface.begin(), preface.end());
  put_frame_header(out, 6, frame_type::settings, 0, 0);
  put_u16(out, 0x2);  // SETTINGS_ENABLE_PUSH
  put_u32(out, 0);
  put_frame_header(out, block.size(), frame_type::headers, flag_end_stream | flag_end_headers, stream_id);
  out.insert(out.end(), block.begin(), block.end());
  return out;
}

// The response's :status from the start of its first header block: "200", another code, or
// what stood there instead. Servers send :status 200 as static entry 8 (0x88); other codes as
// entries 9..14 or as a literal whose name is one of entries 8..14. A dynamic table size
// update may come first. A Huffman-coded value is only recognised as "200".
std::string status_of(std::span<const std::uint8_t> block) {
  static constexpr std::array<std::string_view, 7> static_codes{"200", "204", "206", "304", "400", "404", "500"};
  std::size_t at = 0;
  while (at < block.size() && (block[at] & 0xe0) == 0x20)
    if (!get_hpack_int(block, at, 5)) return "cut short";
  if (at >= block.size()) return "missing";
  const std::uint8_t first = block[at];
  const bool indexed = (first & 0x80) != 0;
  const auto index = get_hpack_int(block, at, indexed ? 7 : (first & 0x40) != 0 ? 6 : 4);
  if (!index || *index < 8 || *index > 14) {
    std::array<char, 48> what{};
    std::snprintf(what.data(), what.size(), "not :status (the block starts 0x%02x)", first);
    return what.data();
  }
  if (indexed) return std::string(static_codes[*index - 8]);
  if (at >= block.size()) return "cut short";
  const bool huffman = (block[at] & 0x80) != 0;
  const auto length = get_hpack_int(block, at, 7);
  if (!length || *length > block.size() - at) return "cut short";
  const std::string value(block.begin() + static_cast<std::ptrdiff_t>(at),
                          block.begin() + static_cast<std::ptrdiff_t>(at + *length));
  if (!huffman) return value;
  return value == std::string_view("\x68\x00", 2) ? "200" : "Huffman-coded, not 200";
}

struct frame {
  frame_type type;
  std::uint8_t flags;
  std::uint32_t stream;
  std::span<const std::uint8_t> payload;
};

// Frames off the TLS stream, read 16 KiB at a time: a 1 KiB page costs a read or two.
class frame_reader {
 public:
  explicit frame_reader(tls_stream& stream) : stream_(stream) {}

  // The next whole frame into `out` (valid until the next call); what went wrong, or "".
  asio::awaitable<std::string> next(frame& out) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(consumed_));
    consumed_ = 0;
    if (auto problem = co_await fill(frame_header_size); !problem.empty()) co_return problem;
    const std::size_t length = std::size_t{buffer_[0]} << 16 | std::size_t{buffer_[1]} << 8 | buffer_[2];
    if (length > max_frame) co_return "a frame of " + std::to_string(length) + " bytes (limit 16384)";
    if (auto problem = co_await fill(frame_header_size + length); !problem.empty()) co_return problem;
    out = {static_cast<frame_type>(buffer_[3]), buffer_[4], get_u32(std::span(buffer_).subspan(5, 4)) & 0x7fffffff,
           std::span<const std::uint8_t>(buffer_).subspan(frame_header_size, length)};
    consumed_ = frame_header_size + length;
    co_return "";
  }

 private:
  asio::awaitable<std::string> fill(std::size_t need) {
    constexpr std::size_t piece = 16 * 1024;
    while (buffer_.size() < need) {
      const std::size_t have = buffer_.size();
      buffer_.resize(have + piece);
      auto [ec, n] = co_await stream_.async_read_some(asio::buffer(buffer_.data() + have, piece), nothrow);
      buffer_.resize(have + n);
      if (ec) co_return "read: " + ec.message();
    }
    co_return "";
  }

  tls_stream& stream_;
  bytes buffer_;
  std::size_t consumed_ = 0;
};

// The payload without its padding (and, on HEADERS, without its priority fields); nullopt if
// the padding is longer than the frame.
std::optional<std::span<const std::uint8_t>> content_of(const frame& f, std::size_t priority_size) {
  auto payload = f.payload;
  std::size_t pad = 0;
  if ((f.flags & flag_padded) != 0) {
    if (payload.empty()) return std::nullopt;
    pad = payload[0];
    payload = payload.subspan(1);
  }
  if (pad + priority_size > payload.size()) return std::nullopt;
  return payload.subspan(priority_size, payload.size() - priority_size - pad);
}

asio::awaitable<std::string> send(tls_stream& stream, const bytes& out) {
  auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), nothrow);
  co_return ec ? "write: " + ec.message() : "";
}

}  // namespace

asio::awaitable<response> fetch_http2(tls_stream& stream, const std::string& host, const std::string& path) {
  response r;
  const bytes request = first_flight(host, path);
  if (request.empty()) {
    r.problem = "the request does not fit in one HEADERS frame";
    co_return r;
  }
  if (r.problem = co_await send(stream, request); !r.problem.empty()) co_return r;

  frame_reader reader(stream);
  frame f{};
  bool have_status = false;
  bool in_header_block = false;  // a HEADERS without END_HEADERS: CONTINUATION must follow
  bool end_after_block = false;  // that HEADERS also ended the stream
  std::size_t unacked = 0;       // DATA payload since the last WINDOW_UPDATE
  const auto fail = [&r](std::string what) {
    r.problem = std::move(what);
    return r;
  };
  for (;;) {
    if (auto problem = co_await reader.next(f); !problem.empty()) co_return fail(std::move(problem));
    if (in_header_block != (f.type == frame_type::continuation))
      co_return fail(in_header_block ? "no CONTINUATION after an unfinished header block" : "a stray CONTINUATION");
    switch (f.type) {
      case frame_type::settings: {
        if (f.stream != 0 || f.payload.size() % 6 != 0) co_return fail("a malformed SETTINGS");
        if ((f.flags & flag_ack) != 0) break;
        bytes ack;
        put_frame_header(ack, 0, frame_type::settings, flag_ack, 0);
        if (auto problem = co_await send(stream, ack); !problem.empty()) co_return fail(std::move(problem));
        break;
      }
      case frame_type::ping: {
        if (f.stream != 0 || f.payload.size() != 8) co_return fail("a malformed PING");
        if ((f.flags & flag_ack) != 0) break;
        bytes pong;
        put_frame_header(pong, 8, frame_type::ping, flag_ack, 0);
        pong.insert(pong.end(), f.payload.begin(), f.payload.end());
        if (auto problem = co_await send(stream, pong); !problem.empty()) co_return fail(std::move(problem));
        break;
      }
      case frame_type::headers: {
        if (f.stream != stream_id) co_return fail("HEADERS on stream " + std::to_string(f.stream));
        const auto block = content_of(f, (f.flags & flag_priority) != 0 ? 5 : 0);
        if (!block) co_return fail("a malformed HEADERS");
        // The first HEADERS carries the status; a later one is trailers, only its flags matter.
        if (!have_status) {
          have_status = true;
          if (const auto status = status_of(*block); status != "200") {
            r.bad_status = true;
            co_return fail("status: " + status);
          }
        }
        in_header_block = (f.flags & flag_end_headers) == 0;
        end_after_block = (f.flags & flag_end_stream) != 0;
        if (end_after_block && !in_header_block) co_return r;
        break;
      }
      case frame_type::continuation:
        if (f.stream != stream_id) co_return fail("CONTINUATION on stream " + std::to_string(f.stream));
        in_header_block = (f.flags & flag_end_headers) == 0;
        if (end_after_block && !in_header_block) co_return r;
        break;
      case frame_type::data: {
        if (f.stream != stream_id) co_return fail("DATA on stream " + std::to_string(f.stream));
        if (!have_status) co_return fail("DATA before HEADERS");
        const auto body = content_of(f, 0);
        if (!body) co_return fail("a malformed DATA");
        r.body_bytes += body->size();
        if ((f.flags & flag_end_stream) != 0) co_return r;
        // Flow control counts the whole payload, padding included.
        unacked += f.payload.size();
        if (unacked < window_refill) break;
        bytes update;
        for (const std::uint32_t id : {0u, stream_id}) {
          put_frame_header(update, 4, frame_type::window_update, 0, id);
          put_u32(update, static_cast<std::uint32_t>(unacked));
        }
        unacked = 0;
        if (auto problem = co_await send(stream, update); !problem.empty()) co_return fail(std::move(problem));
        break;
      }
      case frame_type::rst_stream:
        if (f.stream != stream_id) break;
        if (f.payload.size() != 4) co_return fail("a malformed RST_STREAM");
        co_return fail("RST_STREAM (error " + std::to_string(get_u32(f.payload)) + ") before the response ended");
      case frame_type::goaway: {
        if (f.stream != 0 || f.payload.size() < 8) co_return fail("a malformed GOAWAY");
        // A graceful GOAWAY that still covers stream 1 (a server shutting down, or closing
        // after this request) lets the response finish; any other ends it here.
        const std::uint32_t last_stream = get_u32(f.payload) & 0x7fffffff;
        const std::uint32_t error = get_u32(f.payload.subspan(4));
        if (last_stream >= stream_id && error == 0) break;
        co_return fail("GOAWAY (error " + std::to_string(error) + ", last stream " + std::to_string(last_stream) +
                       ") before the response ended");
      }
      case frame_type::push_promise: co_return fail("PUSH_PROMISE although push is disabled");
      default:  // WINDOW_UPDATE (this client sends no DATA), PRIORITY, and types it does not know
        break;
    }
  }
}

asio::awaitable<void> send_goaway(tls_stream& stream) {
  bytes goaway;
  put_frame_header(goaway, 8, frame_type::goaway, 0, 0);
  put_u32(goaway, 0);  // last stream: the server opened none
  put_u32(goaway, 0);  // NO_ERROR
  co_await send(stream, goaway);
}

}  // namespace airlock::bench

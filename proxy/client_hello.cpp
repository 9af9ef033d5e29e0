#include "proxy/client_hello.hpp"

#include <algorithm>
#include <string_view>

namespace airlock::proxy::client_hello {
namespace {

constexpr std::uint8_t content_type_handshake = 22;
constexpr std::uint8_t handshake_type_client_hello = 1;
constexpr std::size_t handshake_header_size = 4;
constexpr std::size_t random_size = 32;
constexpr std::size_t max_session_id_size = 32;
constexpr std::size_t max_handshake_length = 0xffffff;  // the length field has 24 bits
constexpr std::uint8_t host_name_type = 0;

enum class status { ok, short_input, bad };

std::uint8_t byte_at(std::span<const std::byte> bytes, std::size_t i) noexcept {
  return std::to_integer<std::uint8_t>(bytes[i]);
}

// Reads inside a declared length over bytes that may not all have arrived yet. Running past the
// declared end means a length field lies (bad); running past the data means read more
// (short_input). The distinction lets a partial hello fail early without ever failing a genuine
// prefix. The first problem sticks, so a walk can read on and check the state once.
class cursor {
 public:
  cursor(std::span<const std::byte> data, std::size_t pos, std::size_t end) noexcept
      : data_{data}, pos_{pos}, end_{end} {}

  status state() const noexcept { return state_; }
  bool ok() const noexcept { return state_ == status::ok; }
  bool at_end() const noexcept { return ok() && pos_ == end_; }
  std::size_t remaining() const noexcept { return end_ - pos_; }
  void reject() noexcept {
    if (ok()) state_ = status::bad;
  }

  // Big-endian unsigned integer of `width` bytes (at most 4); 0 once the cursor has failed.
  std::uint32_t number(std::size_t width) noexcept {
    if (!take(width)) return 0;
    std::uint32_t value = 0;
    for (std::size_t i = pos_ - width; i < pos_; ++i) value = (value << 8) | byte_at(data_, i);
    return value;
  }

  // The next `size` bytes as text; empty once the cursor has failed.
  std::string_view text(std::size_t size) noexcept {
    if (!take(size)) return {};
    return {reinterpret_cast<const char*>(data_.data() + (pos_ - size)), size};
  }

  // A cursor over the next `size` bytes, which this one skips. Only the length is checked here:
  // the child reports missing bytes itself, and a later read here reports them too.
  cursor sub(std::size_t size) noexcept {
    cursor child{data_, pos_, pos_};
    if (ok() && size > remaining()) state_ = status::bad;
    if (!ok()) {
      child.state_ = state_;
      return child;
    }
    child.end_ = pos_ + size;
    pos_ += size;
    return child;
  }

 private:
  bool take(std::size_t size) noexcept {
    if (!ok()) return false;
    if (size > remaining()) {
      state_ = status::bad;
      return false;
    }
    const std::size_t available = data_.size() > pos_ ? data_.size() - pos_ : 0;
    if (size > available) {
      state_ = status::short_input;
      return false;
    }
    pos_ += size;
    return true;
  }

  std::span<const std::byte> data_;
  std::size_t pos_;
  std::size_t end_;
  status state_ = status::ok;
};

// RFC 6066 allows a list, but two names would make the decision ambiguous: exactly one host_name.
status read_server_name(cursor body, found& out) noexcept {
  const auto list_size = body.number(2);
  if (body.ok() && list_size != body.remaining()) body.reject();
  if (body.number(1) != host_name_type) body.reject();
  const auto name_size = body.number(2);
  if (body.ok() && name_size == 0) body.reject();
  const auto name = body.text(name_size);
  if (body.ok() && !body.at_end()) body.reject();
  if (body.ok()) {
    out.sni.assign(name);
    out.has_sni = true;
  }
  return body.state();
}

status read_alpn(cursor body, found& out) noexcept {
  const auto list_size = body.number(2);
  if (body.ok() && (list_size == 0 || list_size != body.remaining())) body.reject();
  while (body.ok() && !body.at_end()) {
    const auto name_size = body.number(1);
    if (body.ok() && name_size == 0) body.reject();
    const auto name = body.text(name_size);
    if (body.ok()) out.alpn.emplace_back(name);
  }
  return body.state();
}

status read_extensions(cursor& c, found& out) noexcept {
  bool seen_server_name = false;
  bool seen_alpn = false;
  while (c.ok() && !c.at_end()) {
    const auto type = c.number(2);
    const auto size = c.number(2);
    cursor body = c.sub(size);
    if (!c.ok()) break;
    status s = status::ok;
    // A repeated extension we read would let two parsers pick different values.
    if (type == extension_server_name) {
      if (seen_server_name) return status::bad;
      seen_server_name = true;
      s = read_server_name(body, out);
    } else if (type == extension_alpn) {
      if (seen_alpn) return status::bad;
      seen_alpn = true;
      s = read_alpn(body, out);
    } else if (type == extension_ech) {
      // Only presence matters: the inner hello is encrypted, so the outer name is all we get.
      out.ech = true;
    }
    if (s != status::ok) return s;
  }
  return c.state();
}

// Walks the ClientHello body; `c` spans the declared message, of which a prefix may be present.
status read_body(cursor& c, found& out) noexcept {
  if (c.number(1) != 3) c.reject();  // legacy_version major; the minor varies (0x0301..0x0303)
  c.number(1);
  c.text(random_size);
  const auto session_id_size = c.number(1);
  if (session_id_size > max_session_id_size) c.reject();
  c.text(session_id_size);
  const auto cipher_suites_size = c.number(2);
  if (c.ok() && (cipher_suites_size < 2 || cipher_suites_size % 2 != 0)) c.reject();
  c.text(cipher_suites_size);
  const auto compression_methods_size = c.number(1);
  if (c.ok() && compression_methods_size < 1) c.reject();
  c.text(compression_methods_size);
  if (c.at_end()) return status::ok;  // pre-extension clients (SSLv3-era) end here
  const auto extensions_size = c.number(2);
  // Nothing may follow the extensions: hidden bytes are where parsers disagree.
  if (c.ok() && extensions_size != c.remaining()) c.reject();
  return read_extensions(c, out);
}

// Handshake bytes gathered from consecutive records. Copies only when the message spans records,
// which real clients rarely do, so the common case allocates nothing here.
class assembler {
 public:
  std::span<const std::byte> bytes() const noexcept {
    return fragments_ > 1 ? std::span<const std::byte>{joined_} : single_;
  }
  std::size_t size() const noexcept { return bytes().size(); }

  void add(std::span<const std::byte> fragment) {
    if (fragment.empty()) return;
    if (fragments_ == 0) {
      single_ = fragment;
    } else {
      if (fragments_ == 1) joined_.assign(single_.begin(), single_.end());
      joined_.insert(joined_.end(), fragment.begin(), fragment.end());
    }
    ++fragments_;
  }

  void truncate(std::size_t size) noexcept {
    if (fragments_ > 1) {
      joined_.resize(std::min(size, joined_.size()));
    } else {
      single_ = single_.first(std::min(size, single_.size()));
    }
  }

 private:
  std::span<const std::byte> single_;
  std::vector<std::byte> joined_;
  std::size_t fragments_ = 0;
};

}  // namespace

result parse(std::span<const std::byte> bytes, std::size_t max_size) noexcept {
  const std::size_t cap = std::min(max_size, max_handshake_length);
  assembler message;
  // Until the handshake header is known, gather at most header + cap bytes.
  std::size_t wanted = handshake_header_size + cap;
  bool length_known = false;
  bool complete = false;
  std::size_t consumed = 0;

  for (std::size_t pos = 0;; pos = consumed) {
    const auto record = bytes.subspan(pos);
    const bool first = pos == 0;
    // Judge each header byte as soon as it arrives, so junk is refused without waiting.
    if (record.empty()) break;
    if (byte_at(record, 0) != content_type_handshake) {
      if (first) return not_tls{};
      return failed{error::malformed};  // e.g. an alert or application data inside the hello
    }
    if (record.size() < 2) break;
    if (byte_at(record, 1) != 3) {
      if (first) return not_tls{};
      return failed{error::malformed};
    }
    if (record.size() < record_header_size) break;
    const std::size_t length = (std::size_t{byte_at(record, 3)} << 8) | byte_at(record, 4);
    // RFC 8446 5.1 forbids zero-length handshake fragments; they would only pad the walk.
    if (length > max_record_size || length == 0) return failed{error::malformed};

    const auto fragment = record.subspan(record_header_size, std::min(length, record.size() - record_header_size));
    // Bytes after the message inside its last record are ignored, so they are never gathered.
    message.add(fragment.first(std::min(fragment.size(), wanted - message.size())));
    const auto gathered = message.bytes();
    if (gathered.empty()) break;  // only the record header has arrived
    if (byte_at(gathered, 0) != handshake_type_client_hello) return failed{error::malformed};
    if (!length_known && gathered.size() >= handshake_header_size) {
      const std::size_t body_size = (std::size_t{byte_at(gathered, 1)} << 16) |
                                    (std::size_t{byte_at(gathered, 2)} << 8) | byte_at(gathered, 3);
      if (body_size > cap) return failed{error::too_large};
      length_known = true;
      wanted = handshake_header_size + body_size;
      // The record may hold more than this message; keep exactly the message.
      message.truncate(wanted);
    }
    if (fragment.size() < length) break;  // the record itself is still arriving
    consumed = pos + record_header_size + length;
    if (length_known && message.size() >= wanted) {
      complete = true;
      break;
    }
  }

  if (!length_known) return need_more{};
  found out;
  cursor c{message.bytes(), handshake_header_size, wanted};
  const status s = read_body(c, out);
  if (s == status::bad) return failed{error::malformed};
  if (!complete) return need_more{};
  if (s != status::ok) return failed{error::malformed};  // unreachable: all declared bytes are here
  out.consumed = consumed;
  return out;
}

}  // namespace airlock::proxy::client_hello

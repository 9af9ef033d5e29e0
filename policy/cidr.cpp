#include "policy/cidr.hpp"

#include <charconv>

namespace airlock::policy {
namespace {

using boost::asio::ip::address;

base::result<address> parse_address(std::string_view text) {
  boost::system::error_code ec;
  auto a = boost::asio::ip::make_address(std::string(text), ec);
  if (ec) return "'" + std::string(text) + "' is not an IP address";
  // Scoped IPv6 (fe80::1%eth0) names an interface, which a policy cannot mean portably.
  if (a.is_v6() && a.to_v6().scope_id() != 0) return "'" + std::string(text) + "': zone ids are not supported";
  return a;
}

template <typename Bytes>
bool prefix_equal(const Bytes& x, const Bytes& y, unsigned prefix) {
  for (std::size_t i = 0; i < x.size() && prefix > 0; ++i) {
    unsigned bits = prefix >= 8 ? 8 : prefix;
    auto mask = static_cast<unsigned char>(0xff << (8 - bits));
    if ((x[i] & mask) != (y[i] & mask)) return false;
    prefix -= bits;
  }
  return true;
}

template <typename Bytes>
bool host_bits_zero(const Bytes& b, unsigned prefix) {
  for (std::size_t i = 0; i < b.size(); ++i) {
    unsigned bit_start = static_cast<unsigned>(i) * 8;
    if (bit_start + 8 <= prefix) continue;
    unsigned keep = prefix > bit_start ? prefix - bit_start : 0;
    auto mask = static_cast<unsigned char>(keep == 0 ? 0xff : 0xff >> keep);
    if ((b[i] & mask) != 0) return false;
  }
  return true;
}

}  // namespace

base::result<cidr> cidr::parse(std::string_view text) {
  auto slash = text.find('/');
  auto addr = parse_address(text.substr(0, slash));
  if (!addr.has_value()) return addr.error();
  unsigned max = addr->is_v4() ? 32 : 128;
  unsigned prefix = max;
  if (slash != std::string_view::npos) {
    auto len = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(len.data(), len.data() + len.size(), prefix);
    if (ec != std::errc{} || end != len.data() + len.size() || len.empty() || prefix > max)
      return "'" + std::string(text) + "': prefix length must be 0.." + std::to_string(max);
  }
  bool zero = addr->is_v4() ? host_bits_zero(addr->to_v4().to_bytes(), prefix)
                            : host_bits_zero(addr->to_v6().to_bytes(), prefix);
  if (!zero) return "'" + std::string(text) + "' has host bits set below /" + std::to_string(prefix);
  return cidr{*addr, static_cast<std::uint8_t>(prefix)};
}

bool cidr::contains(const address& a) const noexcept {
  if (a.is_v4() != network.is_v4()) {
    // An IPv4-mapped IPv6 client (dual-stack socket) is the IPv4 host it maps.
    if (a.is_v6() && a.to_v6().is_v4_mapped())
      return contains(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()));
    return false;
  }
  if (a.is_v4()) return prefix_equal(a.to_v4().to_bytes(), network.to_v4().to_bytes(), prefix);
  return prefix_equal(a.to_v6().to_bytes(), network.to_v6().to_bytes(), prefix);
}

std::string cidr::to_string() const { return network.to_string() + "/" + std::to_string(prefix); }

base::result<endpoint_config> endpoint_config::parse(std::string_view text) {
  std::string_view host;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find("]:");
    if (close == std::string_view::npos) return "'" + std::string(text) + "': expected [IPV6]:PORT";
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon)
      return "'" + std::string(text) + "': expected ADDRESS:PORT (IPv6 as [ADDRESS]:PORT)";
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  auto addr = parse_address(host);
  if (!addr.has_value()) return addr.error();
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc{} || end != port.data() + port.size() || port.empty() || value > 65535)
    return "'" + std::string(text) + "': port must be 0..65535";
  return endpoint_config{*addr, static_cast<std::uint16_t>(value)};
}

std::string endpoint_config::to_string() const {
  return address.is_v6() ? "[" + address.to_string() + "]:" + std::to_string(port)
                         : address.to_string() + ":" + std::to_string(port);
}

}  // namespace airlock::policy

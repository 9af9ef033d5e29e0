#include "attribution/socket_key.hpp"

namespace airlock::attribution {

namespace ip = boost::asio::ip;

ip::address unmapped(const ip::address& a) noexcept {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
  return a;
}

socket_key socket_key::make(transport proto, const ip::address& local, std::uint16_t local_port,
                            const ip::address& remote, std::uint16_t remote_port) {
  return socket_key{proto, unmapped(local), local_port, unmapped(remote), remote_port};
}

std::string socket_key::to_string() const {
  auto endpoint = [](const ip::address& a, std::uint16_t port) {
    const std::string text = a.to_string();
    return (a.is_v6() ? "[" + text + "]" : text) + ":" + std::to_string(port);
  };
  return std::string(proto == transport::tcp ? "tcp " : "udp ") + endpoint(local_address, local_port) + " -> " +
         endpoint(remote_address, remote_port);
}

}  // namespace airlock::attribution

// libFuzzer target for the HTTPS/SVCB rewrite (dns/svcb_filter.hpp). Input: a flags byte
// (bit 0: drop h3), then the rdata. Properties of what is passed on, read back with a
// parser written here independently: it is well-formed SVCB (a name, then params with
// strictly increasing keys that exactly fill it), carries no ech or address hint, no h3 ALPN
// id when h3 is dropped, every mandatory key it declares is present, the priority and target
// are the input's, and the rewrite of a rewrite is itself (nothing left to take out).
#include "dns/svcb_filter.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

void require(bool holds) {
  if (!holds) std::abort();
}

unsigned u16(std::string_view s, std::size_t i) {
  return static_cast<unsigned>(static_cast<unsigned char>(s[i])) << 8 | static_cast<unsigned char>(s[i + 1]);
}

void check_output(std::string_view in, std::string_view out, bool drop_h3) {
  require(out.size() >= 3);
  const auto target = airlock::dns::uncompressed_name_length(out.substr(2));
  require(target.has_value());
  const std::size_t params_at = 2 + *target;
  require(in.substr(0, params_at) == out.substr(0, params_at));  // priority and target kept
  if (u16(out, 0) == 0) {
    require(out.size() == params_at);  // AliasMode: no params at all
    return;
  }
  std::vector<unsigned> keys;
  std::string_view mandatory;
  for (std::size_t pos = params_at; pos < out.size();) {
    require(out.size() - pos >= 4);
    const unsigned key = u16(out, pos), len = u16(out, pos + 2);
    require(out.size() - pos - 4 >= len);
    require(keys.empty() || key > keys.back());
    require(key != 4 && key != 5 && key != 6);  // ipv4hint, ech, ipv6hint
    const auto value = out.substr(pos + 4, len);
    if (key == 1) {  // alpn: non-empty ids, exactly filling, none h3 when dropped
      require(!value.empty());
      for (std::size_t i = 0; i < value.size();) {
        const std::size_t n = static_cast<unsigned char>(value[i]);
        require(n > 0 && value.size() - i - 1 >= n);
        require(!(drop_h3 && value.substr(i + 1, n).starts_with("h3")));
        i += 1 + n;
      }
    }
    if (key == 0) mandatory = value;
    keys.push_back(key);
    pos += 4 + len;
  }
  for (std::size_t i = 0; i + 1 < mandatory.size(); i += 2) {
    bool present = false;
    for (const unsigned k : keys) present = present || k == u16(mandatory, i);
    require(present);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool drop_h3 = data[0] & 1;
  const std::string_view rdata(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto out = airlock::dns::filter_svcb(rdata, drop_h3);
  if (!out) return 0;
  check_output(rdata, *out, drop_h3);
  const auto again = airlock::dns::filter_svcb(*out, drop_h3);
  require(again.has_value() && *again == *out);
  return 0;
}

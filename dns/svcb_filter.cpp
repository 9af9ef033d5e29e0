// HTTPS/SVCB rdata as a client may see it (dns/svcb_filter.hpp).
#include "dns/svcb_filter.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace airlock::dns {
namespace {

// SvcParamKeys we act on (RFC 9460 section 14.3.2).
namespace svc_key {
inline constexpr std::uint16_t mandatory = 0, alpn = 1, no_default_alpn = 2, ipv4hint = 4, ech = 5, ipv6hint = 6;
}  // namespace svc_key

std::uint16_t u16_at(std::string_view s, std::size_t i) noexcept {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(s[i]) << 8) | static_cast<unsigned char>(s[i + 1]));
}

void put_u16(std::string& out, std::size_t v) {
  out.push_back(static_cast<char>((v >> 8) & 0xFF));
  out.push_back(static_cast<char>(v & 0xFF));
}

// The alpn value without "h3*" ids when drop_h3 (possibly empty), or nullopt when malformed:
// RFC 9460 section 7.1.1 wants at least one id, each length-prefixed, exactly filling the value;
// ALPN ids are never empty (RFC 7301).
std::optional<std::string> filter_alpn(std::string_view value, bool drop_h3) {
  if (value.empty()) return std::nullopt;
  std::string kept;
  for (std::size_t pos = 0; pos < value.size();) {
    const std::size_t len = static_cast<unsigned char>(value[pos]);
    if (len == 0 || value.size() - pos - 1 < len) return std::nullopt;
    const auto id = value.substr(pos + 1, len);
    if (!(drop_h3 && id.starts_with("h3"))) kept.append(value.substr(pos, 1 + len));
    pos += 1 + len;
  }
  return kept;
}

// A `mandatory` value: a non-empty list of keys in strictly increasing order, not naming itself.
bool mandatory_well_formed(std::string_view value) noexcept {
  if (value.empty() || value.size() % 2 != 0) return false;
  for (std::size_t i = 0; i < value.size(); i += 2) {
    const auto key = u16_at(value, i);
    if (key == svc_key::mandatory || (i > 0 && key <= u16_at(value, i - 2))) return false;
  }
  return true;
}

struct svc_param {
  std::uint16_t key;
  std::string_view value;
};

}  // namespace

// Length of the uncompressed wire name that starts `s`, if it is well formed. No pointers are
// accepted: CNAME rdata is stored decompressed by the parser and an SVCB TargetName must not be
// compressed at all (RFC 9460 section 2.2).
std::optional<std::size_t> uncompressed_name_length(std::string_view s) noexcept {
  constexpr std::size_t max_name = 255, max_label = 63;
  for (std::size_t pos = 0; pos < s.size() && pos < max_name;) {
    const std::size_t len = static_cast<unsigned char>(s[pos]);
    if (len == 0) return pos + 1;
    if (len > max_label) return std::nullopt;
    pos += 1 + len;
  }
  return std::nullopt;
}

std::optional<std::string> filter_svcb(std::string_view rdata, bool drop_h3) {
  if (rdata.size() < 2) return std::nullopt;
  const auto target = uncompressed_name_length(rdata.substr(2));
  if (!target) return std::nullopt;
  const std::size_t params_at = 2 + *target;
  std::string out(rdata.substr(0, params_at));
  // AliasMode: clients must ignore any params (RFC 9460 section 2.4.2), so none need checking and
  // none are passed on to a client that might not.
  if (u16_at(rdata, 0) == 0) return out;

  std::vector<svc_param> params;
  for (std::size_t pos = params_at; pos < rdata.size();) {
    if (rdata.size() - pos < 4) return std::nullopt;
    const auto key = u16_at(rdata, pos);
    const std::size_t len = u16_at(rdata, pos + 2);
    if (rdata.size() - pos - 4 < len) return std::nullopt;
    if (!params.empty() && key <= params.back().key) return std::nullopt;  // RFC 9460 section 2.2
    params.push_back({key, rdata.substr(pos + 4, len)});
    pos += 4 + len;
  }

  std::optional<std::string> alpn;
  std::string_view mandatory;
  for (const auto& p : params) {
    if (p.key == svc_key::alpn) {
      alpn = filter_alpn(p.value, drop_h3);
      if (!alpn) return std::nullopt;
    } else if (p.key == svc_key::no_default_alpn) {
      if (!p.value.empty()) return std::nullopt;  // a flag: RFC 9460 section 7.1.1 gives it no value
    } else if (p.key == svc_key::mandatory) {
      if (!mandatory_well_formed(p.value)) return std::nullopt;
      mandatory = p.value;
    }
  }
  // With every id gone the default ALPN is all that is left; no-default-alpn would then leave the
  // record with no protocol at all.
  const bool drop_alpn = alpn && alpn->empty();

  std::vector<std::uint16_t> kept;  // increasing, as params are
  for (const auto& p : params) {
    // ech would hide the SNI the gateway decides on; hints are addresses the A/AAAA filter never saw.
    if (p.key == svc_key::ech || p.key == svc_key::ipv4hint || p.key == svc_key::ipv6hint) continue;
    if (drop_alpn && (p.key == svc_key::alpn || p.key == svc_key::no_default_alpn)) continue;
    const std::string_view value = p.key == svc_key::alpn ? std::string_view(*alpn) : p.value;
    put_u16(out, p.key);
    put_u16(out, value.size());
    out.append(value);
    kept.push_back(p.key);
  }
  // A client ignores a record whose mandatory keys it cannot use (RFC 9460 section 8). Removing
  // the record does that for every client, where passing it on would hand out an inconsistent one.
  for (std::size_t i = 0; i < mandatory.size(); i += 2) {
    if (!std::binary_search(kept.begin(), kept.end(), u16_at(mandatory, i))) return std::nullopt;
  }
  return out;
}

}  // namespace airlock::dns

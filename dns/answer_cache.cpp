#include "dns/answer_cache.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace airlock::dns {
namespace {

// RFC 2308: the negative TTL is the smaller of the SOA record's TTL and its MINIMUM field
// (the last 4 bytes of its RDATA).
std::optional<std::uint32_t> negative_ttl(const wire::message& m) {
  for (const auto& rr : m.authority) {
    if (rr.rtype != wire::type::soa || rr.rdata.size() < 4) continue;
    std::uint32_t minimum = 0;
    const auto* p = reinterpret_cast<const unsigned char*>(rr.rdata.data() + rr.rdata.size() - 4);
    minimum = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
    return std::min(rr.ttl, minimum);
  }
  return std::nullopt;
}

void age(std::vector<wire::record>& records, std::uint32_t seconds) {
  for (auto& rr : records) rr.ttl = rr.ttl > seconds ? rr.ttl - seconds : 0;
}

}  // namespace

void answer_cache::key(std::string& out, std::string_view name, std::uint16_t qtype) {
  char digits[5];
  const auto end = std::to_chars(digits, digits + sizeof digits, qtype).ptr;
  out.assign(name);
  out += '/';
  out.append(digits, end);
}

std::optional<wire::message> answer_cache::find(std::string_view name, std::uint16_t qtype, clock::time_point now) {
  const std::lock_guard lock(mutex_);
  key(lookup_key_, name, qtype);
  auto it = entries_.find(lookup_key_);
  if (it == entries_.end()) return std::nullopt;
  auto e = it->second;
  if (e->expires <= now) {
    entries_.erase(it);
    lru_.erase(e);
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, e);
  wire::message copy = e->answer;
  const auto seconds = static_cast<std::uint32_t>(std::chrono::duration_cast<std::chrono::seconds>(now - e->stored).count());
  age(copy.answers, seconds);
  age(copy.authority, seconds);
  return copy;
}

void answer_cache::store(std::string_view name, std::uint16_t qtype, const wire::message& answer, clock::time_point now) {
  if (limits_.max_entries == 0 || answer.hdr.tc()) return;
  std::optional<std::uint32_t> ttl;
  const auto rcode = answer.hdr.rcode_bits();
  if (rcode == static_cast<std::uint8_t>(wire::rcode::noerror) && !answer.answers.empty()) {
    for (const auto& rr : answer.answers) ttl = std::min(ttl.value_or(rr.ttl), rr.ttl);
    if (ttl) ttl = std::min<std::uint32_t>(*ttl, static_cast<std::uint32_t>(limits_.max_ttl.count()));
  } else if (rcode == static_cast<std::uint8_t>(wire::rcode::nxdomain) ||
             rcode == static_cast<std::uint8_t>(wire::rcode::noerror)) {
    ttl = negative_ttl(answer);
    if (ttl) ttl = std::min<std::uint32_t>(*ttl, static_cast<std::uint32_t>(limits_.max_negative_ttl.count()));
  }
  if (!ttl || *ttl == 0) return;  // SERVFAIL, REFUSED, no SOA, or asked not to be kept

  std::string k;
  key(k, name, qtype);
  const std::lock_guard lock(mutex_);
  if (auto it = entries_.find(k); it != entries_.end()) {
    lru_.erase(it->second);
    entries_.erase(it);
  }
  while (entries_.size() >= limits_.max_entries) {
    entries_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front({k, answer, now, now + std::chrono::seconds(*ttl)});
  entries_.emplace(std::move(k), lru_.begin());
}

std::size_t answer_cache::shrink(std::size_t keep) {
  const std::lock_guard lock(mutex_);
  std::size_t dropped = 0;
  while (entries_.size() > keep) {
    entries_.erase(lru_.back().key);
    lru_.pop_back();
    ++dropped;
  }
  return dropped;
}

}  // namespace airlock::dns

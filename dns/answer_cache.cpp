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

std::optional<wire::message> answer_cache::find(std::string_view name, std::uint16_t qtype,
                                                clock::time_point now) const {
  thread_local std::string k;  // no allocation per lookup
  key(k, name, qtype);
  const entry* e = entries_.find(k);
  if (e == nullptr || e->expires <= now) return std::nullopt;  // an expired one waits for the hand
  if (!e->read.load(std::memory_order_relaxed)) e->read.store(true, std::memory_order_relaxed);
  wire::message copy = e->answer;
  const auto seconds = static_cast<std::uint32_t>(
      std::chrono::duration_cast<std::chrono::seconds>(now - e->stored).count());
  age(copy.answers, seconds);
  age(copy.authority, seconds);
  return copy;
}

void answer_cache::store(std::string_view name, std::uint16_t qtype, const wire::message& answer,
                         clock::time_point now) {
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
  const bool known = entries_.find(k) != nullptr;  // a replacement keeps its place in the clock
  while (!known && entries_.size() >= limits_.max_entries) evict_one(now);
  entries_.put(k, entry(answer, now, now + std::chrono::seconds(*ttl)));
  if (!known) order_.push_back(std::move(k));
}

void answer_cache::evict_one(clock::time_point now) {
  // Each key in order_ is in the map (erase goes only through here), so the hand finds a
  // victim within two turns: the first clears the flags it passes.
  while (!order_.empty()) {
    std::string k = std::move(order_.front());
    order_.pop_front();
    const entry* e = entries_.find(k);
    if (e == nullptr) continue;
    if (e->expires > now && e->read.exchange(false, std::memory_order_relaxed)) {
      order_.push_back(std::move(k));
      continue;
    }
    entries_.erase(k);
    return;
  }
}

std::size_t answer_cache::shrink(std::size_t keep) {
  std::size_t dropped = 0;
  while (entries_.size() > keep && !order_.empty()) {
    evict_one(clock::time_point::min());  // by the clock alone
    ++dropped;
  }
  return dropped;
}

}  // namespace airlock::dns

#include "dns/lookup.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

namespace airlock::dns {

std::optional<boost::asio::ip::address> address_of(const wire::record& rr) {
  if (rr.rclass != wire::class_in) return std::nullopt;
  if (rr.rtype == wire::type::a && rr.rdata.size() == 4) {
    boost::asio::ip::address_v4::bytes_type b;
    std::memcpy(b.data(), rr.rdata.data(), 4);
    return boost::asio::ip::address_v4(b);
  }
  if (rr.rtype == wire::type::aaaa && rr.rdata.size() == 16) {
    boost::asio::ip::address_v6::bytes_type b;
    std::memcpy(b.data(), rr.rdata.data(), 16);
    return boost::asio::ip::address_v6(b);
  }
  return std::nullopt;
}

bool answers_question(const wire::message& m, const policy::domain_name& name, std::uint16_t qtype) {
  if (!m.hdr.qr() || m.questions.size() != 1) return false;
  const auto& q = m.questions.front();
  if (q.qtype != qtype || q.qclass != wire::class_in) return false;
  const auto asked = wire::name_from_text(name.str());
  return asked.has_value() && q.qname.equals_ignore_case(*asked);
}

std::optional<resolved> find_cached(answer_cache& cache, const policy::domain_name& name, std::uint16_t qtype) {
  auto hit = cache.find(name.str(), qtype, answer_cache::clock::now());
  if (!hit) return std::nullopt;
  return resolved{std::move(*hit), true};
}

namespace {

// The upstream's answer, parsed and cached.
boost::system::result<resolved, resolve_error> take_answer(answer_cache& cache, const policy::domain_name& name,
                                                           std::uint16_t qtype, const raw_answer& raw) {
  if (!raw.has_value()) return raw.error();
  auto parsed = wire::parse_message(std::as_bytes(std::span(raw->data(), raw->size())));
  if (!parsed.has_value() || !answers_question(*parsed, name, qtype))
    return resolve_error::bad_answer;  // never cached, never passed on
  cache.store(name.str(), qtype, *parsed, answer_cache::clock::now());
  return resolved{std::move(*parsed), false};
}

}  // namespace

boost::asio::awaitable<boost::system::result<resolved, resolve_error>> resolve_upstream(resolver& r,
                                                                                        answer_cache& cache,
                                                                                        const policy::domain_name& name,
                                                                                        std::uint16_t qtype) {
  co_return take_answer(cache, name, qtype, co_await r.query(name.str(), qtype));
}

boost::asio::awaitable<boost::system::result<resolved, resolve_error>> resolve(resolver& r, answer_cache& cache,
                                                                               const policy::domain_name& name,
                                                                               std::uint16_t qtype) {
  if (auto hit = find_cached(cache, name, qtype)) co_return std::move(*hit);
  co_return take_answer(cache, name, qtype, co_await r.query(name.str(), qtype));
}

namespace {

// The order both address lookups ask in: the second only when the first had none.
std::array<std::uint16_t, 2> address_types(ask_first first) {
  if (first == ask_first::aaaa) return {wire::type::aaaa, wire::type::a};
  return {wire::type::a, wire::type::aaaa};
}

// Appends an answer's A/AAAA addresses; true once there is at least one (asking stops).
bool collect(const wire::message& answer, std::vector<boost::asio::ip::address>& found) {
  for (const auto& rr : answer.answers)
    if (auto a = address_of(rr)) found.push_back(*a);
  return !found.empty();
}
// The same, with the TTL. Asking stops at the first answer that has addresses, so they all
// come from that one answer: its records' smallest TTL is theirs.
bool collect(const wire::message& answer, found_addresses& found) {
  if (!collect(answer, found.addresses)) return false;
  found.ttl = std::numeric_limits<std::uint32_t>::max();
  for (const auto& rr : answer.answers) found.ttl = std::min(found.ttl, rr.ttl);
  return true;
}

}  // namespace

std::optional<found_addresses> cached_addresses(answer_cache& cache, const policy::domain_name& name, ask_first first) {
  found_addresses found;
  for (auto qtype : address_types(first)) {
    auto hit = find_cached(cache, name, qtype);
    if (!hit) return std::nullopt;
    if (collect(hit->answer, found)) break;
  }
  return found;
}

std::vector<boost::asio::ip::address> cached_addresses_of(answer_cache& cache, const policy::domain_name& name,
                                                          std::uint16_t qtype) {
  std::vector<boost::asio::ip::address> found;
  if (auto hit = find_cached(cache, name, qtype)) collect(hit->answer, found);
  return found;
}

boost::asio::awaitable<address_list> lookup_addresses(resolver& r, answer_cache& cache, const policy::domain_name& name,
                                                      ask_first first) {
  found_addresses found;
  for (auto qtype : address_types(first)) {
    auto answer = co_await resolve(r, cache, name, qtype);
    if (!answer.has_value()) co_return answer.error();
    if (collect(answer->answer, found)) break;
  }
  co_return found;
}

}  // namespace airlock::dns

#include "proxy/request_gate.hpp"

#include <algorithm>
#include <utility>
#include <variant>

namespace airlock::proxy {

std::span<const std::byte> request_gate::admit(std::span<const std::byte> read) {
  if (refused_ != 0) return {};
  if (held_.empty()) {
    // The usual case: a read holds whole heads and bodies, and goes on from where it lies.
    const auto n = walk(read);
    if (refused_ == 0 && n < read.size()) held_.assign(reinterpret_cast<const char*>(read.data()) + n, read.size() - n);
    return read.first(n);
  }
  held_.append(reinterpret_cast<const char*>(read.data()), read.size());
  const std::span<const std::byte> all(reinterpret_cast<const std::byte*>(held_.data()), held_.size());
  const auto n = walk(all);
  if (refused_ != 0) held_.resize(n);  // what follows a refused head never goes on
  released_held_ = n;
  return all.first(n);
}

void request_gate::passed() noexcept { held_.erase(0, std::exchange(released_held_, 0)); }

std::size_t request_gate::walk(std::span<const std::byte> bytes) {
  std::size_t at = 0;
  while (at < bytes.size() && refused_ == 0) {
    const auto rest = bytes.subspan(at);
    switch (part_) {
      case part::length: {
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left_, rest.size()));
        at += take;
        left_ -= take;
        if (left_ == 0) part_ = part::head;
        continue;
      }
      case part::chunked: {
        const auto fed = chunks_.feed(rest);
        if (fed.malformed) {
          // The body's bytes before the wrong one went on as they came, however it was split.
          refused_ = judge_.refuse(unframed::malformed_chunk, nullptr, requests_ - 1);
          return at + fed.used;
        }
        at += fed.used;
        if (chunks_.done()) {
          chunks_ = {};
          part_ = part::head;
        }
        continue;
      }
      case part::head: break;
    }
    const auto parsed = http_head::parse(rest);
    if (std::holds_alternative<http_head::need_more>(parsed)) return at;
    const auto* r = std::get_if<http_head::request>(&parsed);
    if (r == nullptr) {
      const auto* f = std::get_if<http_head::failed>(&parsed);
      refused_ = judge_.refuse(f && f->why == http_head::error::too_large ? unframed::head_too_large
                                                                          : unframed::malformed_head,
                               nullptr, requests_);
      return at;
    }
    if (r->body == http_head::body::ambiguous) {
      refused_ = judge_.refuse(unframed::ambiguous_framing, r, requests_);
      return at;
    }
    if ((refused_ = judge_.request(*r, requests_)) != 0) return at;
    ++requests_;
    at += r->head_size;
    if (r->body == http_head::body::length && r->content_length > 0) {
      part_ = part::length;
      left_ = r->content_length;
    } else if (r->body == http_head::body::chunked) {
      part_ = part::chunked;
    }
  }
  return at;
}

}  // namespace airlock::proxy

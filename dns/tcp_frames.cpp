#include "dns/tcp_frames.hpp"

#include <algorithm>
#include <cstring>

namespace airlock::dns {

tcp_frame next_tcp_frame(std::span<const std::byte> buffered) noexcept {
  if (buffered.size() < 2) return {.what = tcp_frame::kind::need_more, .missing = 2 - buffered.size()};
  const std::size_t size = std::to_integer<std::size_t>(buffered[0]) << 8 | std::to_integer<std::size_t>(buffered[1]);
  if (size == 0) return {.what = tcp_frame::kind::empty, .consumed = 2};
  if (buffered.size() - 2 < size) return {.what = tcp_frame::kind::need_more, .missing = size - (buffered.size() - 2)};
  return {.what = tcp_frame::kind::message, .message = buffered.subspan(2, size), .consumed = 2 + size};
}

std::span<std::byte> tcp_frame_buffer::space() noexcept {
  if (begin_ > 0) {  // what was taken makes room at the front
    std::memmove(bytes_.data(), bytes_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == bytes_.size() && bytes_.size() < max_tcp_frame)  // full of one frame's part
    bytes_.resize(std::min(max_tcp_frame, 2 * bytes_.size()));
  return std::span(bytes_).subspan(end_);
}

tcp_frame tcp_frame_buffer::next() noexcept {
  auto frame = next_tcp_frame(std::span(bytes_).subspan(begin_, end_ - begin_));
  begin_ += frame.consumed;
  return frame;
}

}  // namespace airlock::dns

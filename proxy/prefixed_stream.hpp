#pragma once
// A stream that first gives back bytes already read from it, then reads on. The proxy
// reads a client's ClientHello (or request head) to judge it; when the connection is
// then served by airlock itself (TLS terminated, requests parsed), those bytes must be
// read again by the TLS engine or the HTTP parser, as if never taken.
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace airlock::proxy {

template <typename Next>
class prefixed_stream {
 public:
  using executor_type = typename Next::executor_type;
  // What asio::ssl::stream asks of its next layer (Beast keeps tcp_stream's own private).
  using lowest_layer_type = typename Next::socket_type;

  prefixed_stream(Next next, std::vector<std::byte> prefix) : next_(std::move(next)), prefix_(std::move(prefix)) {}

  executor_type get_executor() noexcept { return next_.get_executor(); }
  Next& next_layer() noexcept { return next_; }
  lowest_layer_type& lowest_layer() noexcept { return next_.socket(); }
  const lowest_layer_type& lowest_layer() const noexcept { return next_.socket(); }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    if (taken_ == prefix_.size()) return next_.async_read_some(buffers, std::forward<Token>(token));
    const auto n = boost::asio::buffer_copy(buffers, boost::asio::buffer(prefix_) + taken_);
    taken_ += n;
    if (taken_ == prefix_.size()) {
      prefix_ = {};
      taken_ = 0;
    }
    // Completes through the executor, never inside this call, as every async op must.
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        [](auto handler, executor_type ex, std::size_t bytes) {
          auto target = boost::asio::get_associated_executor(handler, ex);
          boost::asio::post(
              target, [h = std::move(handler), bytes]() mutable { std::move(h)(boost::system::error_code{}, bytes); });
        },
        token, get_executor(), n);
  }

  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return next_.async_write_some(buffers, std::forward<Token>(token));
  }

 private:
  Next next_;
  std::vector<std::byte> prefix_;
  std::size_t taken_ = 0;
};

}  // namespace airlock::proxy

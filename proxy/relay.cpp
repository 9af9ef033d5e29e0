#include "proxy/relay.hpp"

#include "proxy/relay_op.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <utility>

namespace airlock::proxy {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// The relay with the awaiting coroutine's handler: the one part of it that depends on the
// handler's type.
template <typename Handler>
class relay_with_handler final : public relay_op {
 public:
  relay_with_handler(Handler handler, asio::ip::tcp::socket& client, asio::ip::tcp::socket& upstream,
                     std::chrono::steady_clock::duration idle_limit, relay_meter* meter, request_gate* gate,
                     base::cut_switch* cut)
      : relay_op(&relay_with_handler::end, client, upstream, idle_limit, meter, gate, cut),
        handler_(std::move(handler)) {}

 private:
  static void end(relay_op& op, bool ran) {
    auto* self = static_cast<relay_with_handler*>(&op);
    if (!ran) {
      delete self;  // torn down unrun: the awaiting coroutine goes with its handler
      return;
    }
    auto handler = std::move(self->handler_);
    const auto totals = self->totals();
    delete self;
    std::move(handler)(totals);  // on the loop already: resume the awaiting coroutine here
  }

  Handler handler_;
};

}  // namespace

asio::awaitable<relay_totals> relay(tcp::socket& client, tcp::socket& upstream,
                                    std::chrono::steady_clock::duration idle_limit, relay_meter* meter,
                                    request_gate* gate, base::cut_switch* cut) {
  return asio::async_initiate<decltype(asio::use_awaitable), void(relay_totals)>(
      [&client, &upstream, idle_limit, meter, gate, cut](auto handler) {
        auto* op = new relay_with_handler<decltype(handler)>(std::move(handler), client, upstream, idle_limit, meter,
                                                             gate, cut);
        op->start();
      },
      asio::use_awaitable);
}

}  // namespace airlock::proxy

#include "control/api_call.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>

#include <sys/socket.h>
#include <sys/time.h>

namespace airlock::control {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using unix_socket = asio::local::stream_protocol;

base::result<json::value> api_call(const std::string& socket_path, http::verb method, const std::string& target,
                                   const std::string& body, std::chrono::seconds limit) {
  using base::fail;
  asio::io_context io;
  unix_socket::socket s(io);
  boost::system::error_code ec;
  s.connect(unix_socket::endpoint(socket_path), ec);
  if (ec) return fail<json::value>("cannot reach the airlock daemon at " + socket_path + ": " + ec.message());
  timeval tv{static_cast<time_t>(limit.count()), 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "airlock");
  req.set(http::field::content_type, "application/json");
  req.keep_alive(false);
  req.body() = body;
  req.prepare_payload();
  http::write(s, req, ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  if (!ec) http::read(s, buffer, res, ec);
  if (ec) return fail<json::value>("control API " + socket_path + ": " + ec.message());
  json::value v = json::parse(res.body(), ec);
  if (ec) return fail<json::value>("control API " + socket_path + ": answer is not JSON");
  const auto status = static_cast<unsigned>(res.result());
  if (status >= 200 && status < 300) return v;
  std::string message = "daemon refused (" + std::to_string(status) + ")";
  if (v.is_object()) {
    if (const auto* errors = v.as_object().if_contains("errors");
        errors && errors->is_array() && !errors->as_array().empty()) {
      message += ":";
      for (const auto& e : errors->as_array())
        if (e.is_string()) message += "\n  " + std::string(e.as_string());
    } else if (const auto* e = v.as_object().if_contains("error"); e && e->is_string()) {
      message += ": " + std::string(e->as_string());
    }
  }
  return fail<json::value>(std::move(message));
}

}  // namespace airlock::control

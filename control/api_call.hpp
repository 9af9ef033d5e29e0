#pragma once
// One request to the daemon's control API over its unix socket: a short HTTP/1.1 exchange,
// blocking, bounded by a deadline each way (a daemon that accepts but never answers must
// not hang its caller). The launcher's session calls, `airlock grant` and `airlock approve`
// speak through it.
#include "base/result.hpp"

#include <boost/beast/http/verb.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <string>

namespace airlock::control {

// The parsed JSON body of a 2xx answer; else the daemon's own error message ("daemon
// refused (STATUS): ...", its `errors` one per line), or why it could not be asked.
base::result<boost::json::value> api_call(const std::string& socket_path, boost::beast::http::verb method,
                                          const std::string& target, const std::string& body = {},
                                          std::chrono::seconds limit = std::chrono::seconds(5));

}  // namespace airlock::control

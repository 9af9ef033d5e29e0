// The words of an HTTP refusal (proxy/refusal_text.hpp).
#include "proxy/refusal_text.hpp"

#include "base/json_string.hpp"

namespace airlock::proxy::steps {

std::string refusal_body(const record::decision_record& rec) {
  return "{\"reason\":" + base::json_quote(policy::to_string(rec.reason)) + ",\"rule\":" + base::json_quote(rec.rule) +
         ",\"name\":" + base::json_quote(rec.name) + ",\"session\":" + base::json_quote(rec.session) + "}\n";
}

std::string refusal_response(unsigned status, const record::decision_record& rec) {
  const char* text = status == 400   ? "Bad Request"
                     : status == 421 ? "Misdirected Request"
                     : status == 502 ? "Bad Gateway"
                                     : "Forbidden";
  const std::string body = refusal_body(rec);
  return "HTTP/1.1 " + std::to_string(status) + " " + text +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nX-Airlock-Reason: " +
         std::string(policy::to_string(rec.reason)) + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

}  // namespace airlock::proxy::steps

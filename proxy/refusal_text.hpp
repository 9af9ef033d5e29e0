#pragma once
// The words of an HTTP refusal, for HTTP/1 (a whole response) and HTTP/2 (a stream's body):
// no I/O, so the HTTP/2 bridge and its fuzz target use them as they are.
#include "record/decision.hpp"

#include <string>

namespace airlock::proxy::steps {

// The HTTP refusal: `status` (400, 403, 421 or 502), Connection: close, the reason in
// X-Airlock-Reason and a JSON body naming reason, rule, name and session.
std::string refusal_response(unsigned status, const record::decision_record& rec);
// Its body alone (JSON: reason, rule, name, session), for an HTTP/2 stream's refusal.
std::string refusal_body(const record::decision_record& rec);

}  // namespace airlock::proxy::steps

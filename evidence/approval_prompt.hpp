#pragma once
// `airlock approve` read for people: an approval question (a line of GET /v1/approvals,
// record/approval_desk.hpp) as the prompt a person answers, and what they type as an
// answer. Pure functions, so the prompt's text and the replies it takes are tested alone.
#include "record/event.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace airlock::evidence {

struct approval_question {
  std::string id;
  std::string session;
  std::string name;
  std::uint16_t port = 0;  // 0: a DNS query
  std::int64_t expires_in_ms = 0;
  std::int64_t expires_at_ms = 0;         // the deadline, ms since the epoch
  std::optional<record::event> decision;  // the denial as the log would have it
  std::string line;                       // the question's line as it came
};

// A question line; nothing for any other line (an approval_end, approvals_dropped, junk).
std::optional<approval_question> parse_approval_question(std::string_view line);
// The id of an approval_end line, or nothing.
std::optional<std::string> approval_end_id(std::string_view line);

// What the person is shown, ending with the question ("... [o/s/D] "): who wants what, in
// which tool call, what the process was, why it was denied, how long is left.
std::string approval_prompt(const approval_question& q, bool colour);

// A reply as typed: o/once/allow-once, s/session/allow-session, d/deny or an empty line
// (deny, the default). Nothing for anything else (asked again).
std::optional<std::string> parse_approval_reply(std::string_view typed);

}  // namespace airlock::evidence

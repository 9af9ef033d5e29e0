#pragma once
// POST /v1/approvals/ID, carried out: the question is claimed for this answerer, an allow
// becomes a grant of the question's session (allow-once: its host, and port when a
// connection asked, for one connection within a minute; allow-session: until the session
// ends), and then the answer goes to every query and connection the question holds, which
// judge themselves again and find the grant. A grant that cannot be made (a cap) turns the
// answer into a deny, said in the reply.
#include "daemon/session_registry.hpp"
#include "record/approval_desk.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace airlock::daemon {

// How long allow-once's grant waits for the connection it is for.
inline constexpr std::chrono::seconds allow_once_lasts{60};

struct approval_answered {
  std::string id;
  record::approval_answer what = record::approval_answer::deny;
  std::string grant;     // the grant an allow made ("g7"); empty for deny
  std::size_t held = 0;  // queries and connections that took the answer
  std::string refusal;   // why an allow became a deny, when it did
};

registry_result<approval_answered> answer_approval(record::approval_desk& desk, session_registry& registry,
                                                   std::string_view id, record::approval_answer what, std::string by);

}  // namespace airlock::daemon

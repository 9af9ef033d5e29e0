#include "daemon/approval_answer.hpp"

namespace airlock::daemon {

registry_result<approval_answered> answer_approval(record::approval_desk& desk, session_registry& registry,
                                                   std::string_view id, record::approval_answer what, std::string by) {
  using record::approval_answer;
  auto claimed = desk.claim(id, record::approval_desk::clock::now());
  if (!claimed.has_value()) {
    switch (claimed.error()) {
      case record::approval_desk::claim_error::answered:
        return registry_error{409, {"approval '" + std::string(id) + "' was answered already"}};
      case record::approval_desk::claim_error::expired:
        return registry_error{410,
                              {"approval '" + std::string(id) +
                               "' is over: its wait passed and the denial stood; a grant "
                               "(POST /v1/sessions/ID/grants) lets the next attempt through"}};
      case record::approval_desk::claim_error::unknown: break;
    }
    return registry_error{404, {"no approval '" + std::string(id) + "' (see GET /v1/approvals)"}};
  }
  approval_answered out{claimed->id, what, {}, 0, {}};
  record::approval_desk::answer given{what, std::move(by), {}};
  if (what != approval_answer::deny) {
    grant_request g;
    g.allow = claimed->port == 0 ? claimed->name : claimed->name + ":" + std::to_string(claimed->port);
    if (what == approval_answer::allow_once) {
      g.connections = 1;
      g.lasts = allow_once_lasts;
    } else {
      g.session = true;
    }
    g.by = given.by;
    g.approval = claimed->id;
    auto made = registry.add_grant(claimed->session, g);
    if (made.has_value()) {
      out.grant = made->id;
      given.grant = made->rule();
    } else {
      // The denial stands now rather than at the wait's end: nothing would let it through.
      out.refusal = made.error().messages.empty() ? "the grant was refused" : made.error().messages.front();
      out.what = given.what = approval_answer::deny;
      given.by += " (its grant was refused)";
    }
  }
  out.held = desk.give(claimed->id, std::move(given));
  return out;
}

}  // namespace airlock::daemon

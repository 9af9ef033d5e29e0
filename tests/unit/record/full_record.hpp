#pragma once
// A decision record with every field set to a value of its own, for the tests that must
// notice a field lost on the way (the writer and reader, packing, reuse).
#include "record/decision.hpp"

#include <chrono>

namespace airlock::record::testing {

inline const auto when = std::chrono::system_clock::time_point(std::chrono::microseconds(1764676800123456));

// A record with every field set to a value of its own, as `kind` would carry it.
inline decision_record full(event_kind kind) {
  decision_record r;
  r.ts = when;
  r.event = kind;
  r.session = "sbx \"7\"";
  r.labels = {{"repo", "acme/web"}, {"task", "deps\n"}};
  r.tool_call = "call_01";
  r.client = "198.51.100.2:41000";
  r.name = "registry.npmjs.org";
  r.dst = "203.0.113.10:443";
  r.upstream = "203.0.113.10:443";
  r.proto = kind == event_kind::dns ? "dns" : "tls";
  r.verdict = policy::verdict::audit_deny;
  r.reason = policy::reason::host_not_allowed;
  r.rule = "airlock.yaml:14";
  r.conn = kind == event_kind::dns ? 0 : 42;
  r.policy = "agent";
  r.policy_version = "9c1e";
  r.qtype = "AAAA";
  r.rcode = "NOERROR";
  r.answers = {"2001:db8::1", "203.0.113.10"};
  r.method = "GET";
  r.path = "/a?b=c";
  r.status = 403;
  r.bytes_up = 1300;
  r.bytes_down = 3565158;
  r.duration_ms = 1250;
  r.process_json =
      R"({"pid":4201,"comm":"npm","cmdline":"npm install","chain":[{"pid":4201,"comm":"npm","cmdline":"npm install"},{"pid":1,"comm":"sh","cmdline":"sh"}]})";
  r.notes = {"ech", "requests:2"};
  r.action = "close";
  r.mode = "audit";
  r.sources = {"198.51.100.2/32"};
  r.dns_queries = 5;
  r.connections_allowed = 2;
  r.connections_denied = 3;
  return r;
}

}  // namespace airlock::record::testing

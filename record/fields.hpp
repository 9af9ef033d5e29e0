#pragma once
// Every field of a decision record, in one list. Packing, unpacking and reuse go through
// it, so none of them can miss a field; the JSON writer and reader are held together by
// tests/unit/record/round_trip_test.cpp instead (their names and null rules are the
// contract's, not a list's).
#include "record/decision.hpp"

namespace airlock::record {

// Calls `visit` once per field, with that field of each of `records` (one record: packing;
// two: copying field by field).
template <typename Visit, typename... Records>
void each_field(Visit&& visit, Records&... r) {
  visit(r.ts...), visit(r.event...), visit(r.session...), visit(r.labels...), visit(r.tool_call...);
  visit(r.client...), visit(r.name...), visit(r.dst...), visit(r.upstream...), visit(r.proto...);
  visit(r.verdict...), visit(r.reason...), visit(r.rule...), visit(r.conn...), visit(r.policy...);
  visit(r.policy_version...), visit(r.qtype...), visit(r.rcode...), visit(r.answers...), visit(r.method...);
  visit(r.path...), visit(r.status...), visit(r.bytes_up...), visit(r.bytes_down...), visit(r.duration_ms...);
  visit(r.process_json...), visit(r.notes...), visit(r.action...), visit(r.mode...), visit(r.sources...);
  visit(r.dns_queries...), visit(r.connections_allowed...), visit(r.connections_denied...);
}

// A field added to decision_record must be added above; this size catches one that was not.
static_assert(sizeof(void*) != 8 || sizeof(decision_record) == 776,
              "decision_record changed: add the new field to record::each_field");

}  // namespace airlock::record

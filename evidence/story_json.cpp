// A story as JSON for tools: the same tree, with each step's log line as written.
#include "evidence/story.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace airlock::evidence {
namespace json = boost::json;
namespace {

json::object totals_json(const totals& t) {
  json::object o;
  o["dns_queries"] = t.dns_queries;
  o["connections_allowed"] = t.connections_allowed;
  o["connections_denied"] = t.connections_denied;
  o["bytes_up"] = t.bytes_up;
  o["bytes_down"] = t.bytes_down;
  if (t.duration_ms) o["duration_ms"] = *t.duration_ms;
  else o["duration_ms"] = nullptr;
  return o;
}

json::object step_json(const step& s) {
  json::object o;
  o["line"] = s.ev.line;
  o["name"] = s.name;
  o["name_from_dns"] = s.name_from_dns;
  o["name_differs_from_dns"] = s.name_differs_from_dns;
  if (s.ev.process && s.ev.process->unknown.empty()) o["lineage"] = s.ev.process->lineage();
  else o["lineage"] = nullptr;
  json::array children;
  for (const auto& c : s.children) children.push_back(step_json(c));
  o["children"] = std::move(children);
  if (s.closed) o["close"] = s.closed->line;
  else o["close"] = nullptr;
  return o;
}

}  // namespace

json::value to_json(const story& s) {
  json::object o;
  o["session"] = s.session;
  o["log"] = s.log;
  o["policy"] = s.policy;
  json::object labels;
  for (const auto& [k, v] : s.labels) labels[k] = v;
  o["labels"] = std::move(labels);
  json::array steps;
  for (const auto& st : s.steps) steps.push_back(step_json(st));
  o["steps"] = std::move(steps);
  o["totals"] = s.closed ? totals_json(*s.closed) : totals_json(s.counted);
  o["totals_from"] = s.closed ? "session_close" : "lines";
  o["counted"] = totals_json(s.counted);
  json::array denied;
  for (const auto* d : s.denials()) denied.push_back(d->denial()->line);
  o["denials"] = std::move(denied);
  o["lines"] = s.lines;
  o["unparseable_lines"] = s.unparseable;
  o["dropped_lines"] = s.dropped;
  return o;
}

}  // namespace airlock::evidence

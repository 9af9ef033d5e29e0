#include "evidence/story.hpp"

#include <map>
#include <set>

namespace airlock::evidence {
// The log's lines as record/ reads them back: this file is about nothing else.
using record::event;
using record::event_kind;
using record::address_part;
namespace {

// The DNS steps whose answers named an address, so a connection to that address can be
// put under the query that produced it. Forgotten at each session open: a daemon that
// restarted knows none of the old answers.
class answer_index {
 public:
  void add(std::string_view address, std::size_t slot) { by_address_[std::string(address)].push_back(slot); }
  void clear() { by_address_.clear(); }
  // The DNS step a connection to `address` came from: the latest one answered before the
  // connection started, preferring a query for the connection's own name.
  std::optional<std::size_t> find(std::string_view address, const std::string& name,
                                  std::optional<std::int64_t> started_us,
                                  const std::vector<std::optional<step>>& slots) const {
    const auto it = by_address_.find(address);
    if (it == by_address_.end()) return std::nullopt;
    std::optional<std::size_t> best;
    bool best_same_name = false;
    for (auto slot : it->second) {
      const auto& dns = slots[slot]->ev;
      if (started_us && dns.ts_us && *dns.ts_us > *started_us) continue;  // asked after the connection began
      const bool same_name = !name.empty() && dns.name == name;
      if (!best || same_name || !best_same_name) best = slot, best_same_name = same_name;
    }
    if (!best) best = it->second.back();  // clocks disagree: the latest earlier line
    return best;
  }

 private:
  std::map<std::string, std::vector<std::size_t>, std::less<>> by_address_;
};

void add_closed(std::optional<totals>& sum, const event& e) {
  if (!sum) sum = totals{};
  sum->dns_queries += e.dns_queries.value_or(0);
  sum->connections_allowed += e.connections_allowed.value_or(0);
  sum->connections_denied += e.connections_denied.value_or(0);
  sum->bytes_up += e.bytes_up.value_or(0);
  sum->bytes_down += e.bytes_down.value_or(0);
  if (e.duration_ms) sum->duration_ms = sum->duration_ms.value_or(0) + *e.duration_ms;
}

void collect_denials(const std::vector<step>& steps, std::vector<const step*>& out) {
  for (const auto& s : steps) {
    if (s.denial() != nullptr) out.push_back(&s);
    collect_denials(s.children, out);
  }
}

// A connection's lines are joined by `conn`, which counts from 1 again when the daemon
// restarts; each daemon run opens the session again, so (run, conn) names one connection.
using conn_key = std::pair<std::size_t, std::uint64_t>;

// The requests and the close line of each connection whose decision line is in the log,
// whichever order they came in (a decision line first since log schema 2, after its
// requests before). The rest stay steps of their own.
struct connection_parts {
  std::map<conn_key, std::vector<event>> requests;
  std::map<conn_key, event> closes;
};

connection_parts take_connection_parts(std::vector<event>& events) {
  std::set<conn_key> decided;
  std::size_t run = 0;
  for (const auto& e : events) {
    if (e.kind == event_kind::session && e.action == "open") ++run;
    if (e.kind == event_kind::connect && e.conn) decided.insert({run, *e.conn});
  }
  connection_parts parts;
  std::vector<event> rest;
  run = 0;
  for (auto& e : events) {
    if (e.kind == event_kind::session && e.action == "open") ++run;
    const bool part = (e.kind == event_kind::http || e.kind == event_kind::close) && e.conn;
    if (!part || !decided.contains({run, *e.conn})) {
      rest.push_back(std::move(e));
      continue;
    }
    if (e.kind == event_kind::http) parts.requests[{run, *e.conn}].push_back(std::move(e));
    else parts.closes.insert_or_assign({run, *e.conn}, std::move(e));
  }
  events = std::move(rest);
  return parts;
}

}  // namespace

const event* step::denial() const {
  if (ev.is_decision() && ev.denied()) return &ev;
  if (closed && closed->is_cut()) return &*closed;
  if (ev.is_cut()) return &ev;  // a close line whose decision is not in this log
  return nullptr;
}

std::vector<const step*> story::denials() const {
  std::vector<const step*> out;
  collect_denials(steps, out);
  return out;
}

story build_story(record::session_log log) {
  story s;
  s.session = log.session;
  s.log = log.path;
  s.unparseable = log.unparseable;
  s.dropped = log.dropped;
  s.lines = log.events.size();
  auto parts = take_connection_parts(log.events);
  std::vector<std::optional<step>> slots;  // optional: a connection moves under its DNS step
  answer_index answers;
  std::optional<std::int64_t> first_ts, last_ts, open_ts;
  std::size_t run = 0;
  for (auto& e : log.events) {
    if (e.ts_us) {
      if (!first_ts) first_ts = e.ts_us;
      last_ts = e.ts_us;
    }
    if (s.policy.empty() && !e.policy.empty()) s.policy = e.policy;
    if (s.labels.empty() && !e.labels.empty()) s.labels = e.labels;
    step st;
    st.name = e.name;
    switch (e.kind) {
      case event_kind::session:
        if (e.action == "open") {
          ++run;
          answers.clear();
          if (!open_ts) open_ts = e.ts_us;
        } else if (e.action == "close") {
          add_closed(s.closed, e);
        }
        break;
      case event_kind::dns:
        ++s.counted.dns_queries;
        for (const auto& a : e.answers) answers.add(a, slots.size());
        break;
      case event_kind::connect: {
        if (e.denied()) ++s.counted.connections_denied;
        else ++s.counted.connections_allowed;
        if (e.conn) {
          const conn_key key{run, *e.conn};
          if (auto it = parts.requests.find(key); it != parts.requests.end())
            for (auto& r : it->second) {
              step request;
              request.name = r.name;
              request.ev = std::move(r);
              st.children.push_back(std::move(request));
            }
          if (auto it = parts.closes.find(key); it != parts.closes.end()) st.closed = std::move(it->second);
        }
        const event& totals_from = st.closed ? *st.closed : e;  // before schema 2, the connect line had them
        s.counted.bytes_up += totals_from.bytes_up.value_or(0);
        s.counted.bytes_down += totals_from.bytes_down.value_or(0);
        std::optional<std::int64_t> started = e.ts_us;
        if (started && e.duration_ms) *started -= static_cast<std::int64_t>(*e.duration_ms) * 1000;
        // A connection goes under the DNS query whose answer it connected to.
        if (auto dns = answers.find(address_part(e.dst), e.name, started, slots)) {
          if (st.name.empty()) {
            st.name = slots[*dns]->ev.name;
            st.name_from_dns = true;
          } else {
            st.name_differs_from_dns = st.name != slots[*dns]->ev.name;
          }
          st.ev = std::move(e);
          slots[*dns]->children.push_back(std::move(st));
          continue;
        }
        break;
      }
      case event_kind::close:  // its connection's line is not in this log
        s.counted.bytes_up += e.bytes_up.value_or(0);
        s.counted.bytes_down += e.bytes_down.value_or(0);
        break;
      default: break;
    }
    st.ev = std::move(e);
    slots.push_back(std::move(st));
  }
  const auto from = open_ts ? open_ts : first_ts;
  if (from && last_ts && *last_ts >= *from)
    s.counted.duration_ms = static_cast<std::uint64_t>((*last_ts - *from) / 1000);
  for (auto& slot : slots)
    if (slot) s.steps.push_back(std::move(*slot));
  return s;
}

}  // namespace airlock::evidence

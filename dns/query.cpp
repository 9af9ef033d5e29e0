#include "dns/query.hpp"

#include "attribution/probe.hpp"
#include "dns/answer_filter.hpp"
#include "dns/lookup.hpp"
#include "dns/wire.hpp"
#include "policy/cidr.hpp"
#include "policy/grant_check.hpp"
#include "policy/own_addresses.hpp"
#include "policy/redirect_check.hpp"
#include "policy/special_addresses.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace airlock::dns {
namespace {

using policy::reason;
using policy::verdict;

// RFC 8914 extended DNS error codes.
constexpr std::uint16_t ede_blocked = 15;

std::string qtype_name(std::uint16_t t) {
  switch (t) {
    case wire::type::a: return "A";
    case wire::type::ns: return "NS";
    case wire::type::cname: return "CNAME";
    case wire::type::soa: return "SOA";
    case wire::type::ptr: return "PTR";
    case wire::type::mx: return "MX";
    case wire::type::txt: return "TXT";
    case wire::type::aaaa: return "AAAA";
    case wire::type::srv: return "SRV";
    case wire::type::svcb: return "SVCB";
    case wire::type::https: return "HTTPS";
    case wire::type::any: return "ANY";
    default: return "TYPE" + std::to_string(t);
  }
}

std::string rcode_name(std::uint8_t rc) {
  switch (rc) {
    case 0: return "NOERROR";
    case 1: return "FORMERR";
    case 2: return "SERVFAIL";
    case 3: return "NXDOMAIN";
    case 4: return "NOTIMP";
    case 5: return "REFUSED";
    default: return "RCODE" + std::to_string(rc);
  }
}

// An address as inet_ntop writes it (what address::to_string returns), without the
// sprintf that costs more than the rest of an IPv4 address's rendering.
std::string address_text(const boost::asio::ip::address& a) {
  if (!a.is_v4()) return a.to_string();
  const auto b = a.to_v4().to_bytes();
  char buf[16];
  char* p = buf;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i) *p++ = '.';
    p = std::to_chars(p, buf + sizeof buf, b[i]).ptr;
  }
  return std::string(buf, p);
}

// The client as policy::endpoint_config::to_string has it: "a.b.c.d:port", "[v6]:port",
// written into `out` (a reused record's string keeps its memory).
void endpoint_text(std::string& out, const boost::asio::ip::address& a, std::uint16_t port) {
  if (!a.is_v4()) {
    out = policy::endpoint_config{a, port}.to_string();
    return;
  }
  const auto b = a.to_v4().to_bytes();
  char buf[22];
  char* p = buf;
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (i) *p++ = '.';
    p = std::to_chars(p, buf + sizeof buf, b[i]).ptr;
  }
  *p++ = ':';
  p = std::to_chars(p, buf + sizeof buf, port).ptr;
  out.assign(buf, p);
}

// A reply for a packet whose question did not parse, when at least the header is readable
// and it claims to be a query (never answer a response): NOTIMP for an opcode airlock does
// not implement (NOTIFY, UPDATE: RFC 1035 4.1.1), FORMERR for the rest; silence otherwise.
std::optional<std::string> error_for(std::span<const std::byte> packet, wire::rcode rc) {
  auto hdr = wire::parse_header(packet);
  if (!hdr.has_value() || hdr->qr()) return std::nullopt;
  return wire::build_error(*hdr, rc);
}

}  // namespace

// What finish() needs of begin()'s judgement (a query that goes upstream keeps it).
struct started_query::judged {
  std::shared_ptr<const policy::snapshot> snap;
  std::shared_ptr<const policy::session_table> registered;  // session.id may point into it
  policy::snapshot::session session;
  wire::query q;
  policy::domain_name name;
  base::token_bucket::clock::time_point now;
  // Set: the query was denied for want of a rule and waits for an approver this long.
  std::optional<std::chrono::milliseconds> approval_wait;
};

namespace {

// Records whose lines were emitted, kept for the next queries of this thread: a query's
// strings and lists then reuse their memory instead of allocating it again.
std::vector<std::unique_ptr<record::decision_record>>& spare_records() {
  thread_local std::vector<std::unique_ptr<record::decision_record>> spare;
  return spare;
}

record::decision_record* take_record() {
  auto& spare = spare_records();
  if (spare.empty()) return new record::decision_record();
  auto r = std::move(spare.back());
  spare.pop_back();
  record::reset_for_reuse(*r);
  return r.release();
}

}  // namespace

void started_query::back_to_pool::operator()(record::decision_record* r) const noexcept {
  std::unique_ptr<record::decision_record> owned(r);
  auto& spare = spare_records();
  if (spare.size() >= 64) return;  // enough kept: this one is freed
  try {
    spare.push_back(std::move(owned));
  } catch (...) {  // out of memory: freed instead
  }
}

started_query::started_query(query_context& ctx, const boost::asio::ip::address& client_address,
                             std::uint16_t client_port, bool over_udp)
    : ctx_(&ctx),
      client_address_(client_address),
      client_port_(client_port),
      over_udp_(over_udp),
      rec_(take_record()),
      // One line per query on every way out; when a process lookup was started, the line
      // waits for it off the data path (the reply has left by then).
      line_(ctx.log, *rec_) {
  rec_->event = record::event_kind::dns;
  rec_->proto = "dns";
  endpoint_text(rec_->client, client_address, client_port);
}

// Defined here, where `judged` is complete.
started_query::started_query(started_query&& other) noexcept = default;
started_query::~started_query() = default;

bool started_query::must_wait_for_process() const noexcept {
  // A denied name's reply waits for the process lookup (at most 100 ms): the asker is
  // still there to be named, and a denial is what most needs a name. Allowed answers
  // never wait; their lines are completed after the reply has left.
  return line_.probe.active() && rec_->verdict != verdict::allow;
}

// Long (~110 lines) on purpose: every check a query passes before it may wait, in the order a
// reader checks them against docs/decision-log.md, with the reply it gets when one fails.
bool started_query::begin(std::span<const std::byte> packet, const boost::asio::any_io_executor& ex) {
  auto& ctx = *ctx_;
  auto& rec = *rec_;
  auto snap = ctx.policies.current();
  rec.policy_version = snap->version();

  auto parsed = wire::parse_query(packet);
  if (!parsed.has_value()) {
    rec.reason = reason::dns_malformed;
    const auto rc = parsed.error() == wire::parse_error::bad_opcode ? wire::rcode::notimp : wire::rcode::formerr;
    reply_ = error_for(packet, rc);
    rec.rcode = reply_ ? rcode_name(static_cast<std::uint8_t>(rc)) : "";
    return true;
  }
  wire::query& q = *parsed;
  rec.name = q.q.qname.to_text();
  rec.qtype = qtype_name(q.q.qtype);
  if (q.opt && q.opt->version != 0) {
    // RFC 6891: an EDNS version we do not speak gets BADVERS, so the client retries with 0.
    rec.reason = reason::dns_malformed;
    rec.notes.push_back("edns_version_" + std::to_string(q.opt->version));
    rec.rcode = "BADVERS";
    reply_ = wire::build_error(q, wire::rcode::badvers);
    return true;
  }

  // Sets the reply to a refusal; true unless a denial must wait for its process lookup.
  auto refuse = [&](wire::rcode rc, reason why, std::uint16_t ede) {
    rec.verdict = verdict::deny;
    rec.reason = why;
    rec.rcode = rcode_name(static_cast<std::uint8_t>(rc));
    reply_ = wire::build_error(
        q, rc, std::pair<std::uint16_t, std::string>{ede, "airlock: " + std::string(policy::to_string(why))});
    return !must_wait_for_process();
  };

  auto registered = ctx.policies.registered();
  const auto session = snap->session_for(client_address_, registered.get());
  if (!session) {
    std::string held;
    const auto why = policy::snapshot::no_session_reason(client_address_, registered.get(), &held);
    if (!held.empty()) rec.session = held;
    return refuse(wire::rcode::refused, why, ede_blocked);
  }
  rec.session.assign(session->id);
  rec.policy = session->policy->name();

  // Nothing is answered that cannot be recorded (log.when_unwritable). This line is lost
  // with the others, and counted; writing it is what tells the log it can record again.
  if (ctx.refuse_when_unrecorded && !ctx.log.recording()) {
    rec.notes.push_back("limit:decision_log");
    return refuse(wire::rcode::refused, reason::limit_exceeded, ede_blocked);
  }
  if (ctx.overload != nullptr && ctx.overload->refusing()) {
    rec.notes.push_back("limit:memory");
    return refuse(wire::rcode::refused, reason::limit_exceeded, ede_blocked);
  }

  // A sandbox flooding queries (DNS tunnelling, or a loop) is refused before any work.
  const auto now = base::token_bucket::clock::now();
  auto& bucket =
      ctx.buckets.try_emplace(rec.session, ctx.settings.queries_per_second, ctx.settings.burst, now).first->second;
  if (!bucket.take(now)) return refuse(wire::rcode::refused, reason::limit_exceeded, ede_blocked);
  // (After the rate limit: a flood must not fill the process finder's queue.)
  if (over_udp_ && ctx.finder && ctx.netns_of) {
    // The sandbox sent to the gateway's :53 before the redirect; that address is not
    // known here, and a resolver's socket is often unconnected anyway: match any remote.
    const auto key = attribution::socket_key::make(attribution::transport::udp, client_address_, client_port_,
                                                   boost::asio::ip::address(), 0);
    line_.probe = attribution::probe::start(ctx.finder, ctx.netns_of(rec.session), key, ex);
  }

  // ANY is an amplification and enumeration tool; no client airlock serves needs it.
  const auto& refused_types = ctx.settings.refused_types;
  if (q.q.qclass != wire::class_in || q.q.qtype == wire::type::any ||
      std::find(refused_types.begin(), refused_types.end(), q.q.qtype) != refused_types.end())
    return refuse(wire::rcode::refused, reason::dns_type_refused, ede_blocked);

  auto name = policy::domain_name::parse(rec.name);
  // What a denied name gets: NXDOMAIN by default (tools give up at once), or REFUSED.
  const auto denied_rcode = ctx.settings.deny_with_refused ? wire::rcode::refused : wire::rcode::nxdomain;
  if (!name.has_value()) return refuse(denied_rcode, reason::invalid_name, ede_blocked);

  // Firefox's canary: NXDOMAIN here tells it not to switch to its own DoH resolver
  // (which would take DNS past airlock), whatever the policy allows.
  if (name->str() == "use-application-dns.net") {
    rec.notes.push_back("doh_canary");
    return refuse(wire::rcode::nxdomain, reason::host_denied, ede_blocked);
  }

  auto d = session->policy->decide(*name, policy::any_port);
  // A grant, or a followed redirect's allowance, lets the name resolve; the connection
  // uses it.
  std::string granted_rule;
  policy::apply_grant(policy::check_grants(ctx.session_grants, d, session->id, *name, false, 0, policy::wire::unjudged),
                      d, granted_rule);
  const auto redirect = policy::check_redirects(ctx.grants, d, session->id, *name, false);
  policy::apply_redirect(redirect, d, granted_rule);
  if (redirect.what != policy::redirect_outcome::kind::none) rec.notes.push_back("redirect_from:" + redirect.from_host);
  rec.verdict = d.verdict;
  rec.reason = d.reason;
  rec.rule.assign(d.rule);
  if (d.verdict == verdict::deny) {
    // Denied names never leave airlock: no upstream query, so nothing to exfiltrate through.
    const bool done = refuse(denied_rcode, d.reason, ede_blocked);
    const auto wait = session->policy->approval_wait();
    if (!wait || ctx.approvals == nullptr || !policy::grantable(d.reason)) return done;
    // The denial stands unless an approver lifts it within the wait (finish()).
    judged_ = std::make_unique<judged>(
        judged{std::move(snap), std::move(registered), *session, std::move(q), std::move(*name), now, *wait});
    return false;
  }

  judged j{std::move(snap), std::move(registered), *session, std::move(q), std::move(*name), now, {}};
  // A cache hit is answered here and now; a miss goes upstream in finish().
  if (auto hit = find_cached(ctx.cache, j.name, j.q.q.qtype)) {
    reply_ = build_answer(j, std::move(*hit));
    return true;
  }
  judged_ = std::make_unique<judged>(std::move(j));
  return false;
}

// A denial held for an approver: true when the answer allows and the name, judged again,
// now resolves (the answer's grant); the query then goes upstream as an allowed one.
boost::asio::awaitable<bool> started_query::ask_approver(judged& j) {
  auto& rec = *rec_;
  // The approver is shown who asked: the process lookup a denial waits for anyway.
  if (line_.probe.active()) {
    rec.process_json = co_await line_.probe.json(std::chrono::milliseconds(100));
    line_.probe = {};
  }
  auto held = co_await ctx_->approvals->hold(ctx_->approvals->question_for(rec, 0, *j.approval_wait));
  if (!record::note_approval(rec, held)) co_return false;
  j.now = base::token_bucket::clock::now();  // the answer's addresses count their TTL from now
  auto d = j.session.policy->decide(j.name, policy::any_port);
  policy::apply_grant(
      policy::check_grants(ctx_->session_grants, d, j.session.id, j.name, false, 0, policy::wire::unjudged), d,
      granted_rule_);
  if (d.verdict != verdict::allow) co_return false;
  rec.verdict = d.verdict;
  rec.reason = d.reason;
  rec.rule.assign(d.rule);
  rec.rcode.clear();
  j.approval_wait.reset();
  if (auto hit = find_cached(ctx_->cache, j.name, j.q.q.qtype)) reply_ = build_answer(j, std::move(*hit));
  else reply_.reset();
  co_return true;
}

boost::asio::awaitable<std::optional<std::string>> started_query::finish() {
  if (judged_ && judged_->approval_wait && !(co_await ask_approver(*judged_))) judged_.reset();
  if (judged_ && !reply_) {
    auto& j = *judged_;
    reply_ = build_answer(j, co_await resolve_upstream(ctx_->upstream, ctx_->cache, j.name, j.q.q.qtype));
    judged_.reset();
  }
  if (must_wait_for_process()) {
    rec_->process_json = co_await line_.probe.json(std::chrono::milliseconds(100));
    line_.probe = {};
  }
  co_return std::move(reply_);
}

std::optional<std::string> started_query::build_answer(judged& j,
                                                       boost::system::result<resolved, resolve_error> resolved) {
  auto& ctx = *ctx_;
  auto& rec = *rec_;
  const wire::query& q = j.q;
  const auto& session = j.session;
  if (!resolved.has_value()) {
    // Upstream down, timing out or answering garbage: SERVFAIL, never a made-up answer.
    rec.reason = reason::resolve_failed;
    rec.notes.push_back("upstream_" + std::string(to_string(resolved.error())));
    rec.rcode = "SERVFAIL";
    return wire::build_error(q, wire::rcode::servfail);
  }
  if (resolved->from_cache) rec.notes.push_back("cache_hit");
  wire::message* upstream = &resolved->answer;

  wire::message reply;
  reply.hdr.id = q.hdr.id;
  // QR, opcode 0, RD as asked, RA, the upstream's RCODE.
  reply.hdr.flags = static_cast<std::uint16_t>(0x8080 | (q.hdr.flags & 0x0100) | upstream->hdr.rcode_bits());
  reply.questions.push_back(q.q);  // the client's own casing (0x20 clients check it)
  // Only what the client may use leaves airlock: the CNAME chain under the asked name,
  // no special addresses (DNS rebinding) unless a cidr rule allows them, no ECH or
  // address hints in HTTPS/SVCB, no h3 while QUIC is dropped, no AAAA without IPv6.
  const auto own = ctx.policies.own();
  const auto outcome = filter_answer(
      *upstream, q.q.qname, ctx.filter,
      [&](const boost::asio::ip::address& a) {
        return policy::reachable(*session.policy, own.get(), a, policy::any_port);
      },
      own.get());
  for (auto& rr : upstream->answers) {
    if (auto a = address_of(rr)) {
      rec.answers.push_back(address_text(*a));
      // Before the answer leaves: the client's first connection must find it here.
      if (!ctx.names.record(session.id, *a, j.name.str(), q.hdr.id, rr.ttl, j.now))
        rec.notes.push_back("name_table_full");
    }
    if (rr.owner.equals_ignore_case(q.q.qname)) rr.owner = q.q.qname;
  }
  reply.answers = std::move(upstream->answers);
  reply.authority = std::move(upstream->authority);
  if (q.opt) {
    wire::edns opt;
    opt.udp_size = 1232;
    reply.opt = opt;
  }
  std::size_t limit = 65535;
  if (over_udp_) limit = q.opt ? std::max<std::size_t>(512, q.opt->udp_size) : 512;
  rec.rcode = rcode_name(upstream->hdr.rcode_bits());
  if (outcome.svcb_rewritten) rec.notes.push_back("svcb_rewritten_" + std::to_string(outcome.svcb_rewritten));
  if (outcome.removed_aaaa) rec.notes.push_back("aaaa_removed_no_ipv6");
  if (const auto other = outcome.removed() - outcome.removed_special - outcome.removed_aaaa)
    rec.notes.push_back("removed_" + std::to_string(other) + "_out_of_chain_or_malformed");
  if (outcome.removed_special > 0) {
    rec.notes.push_back("stripped_" + std::to_string(outcome.removed_special) + "_special_addresses");
    if (rec.answers.empty()) {
      // NOERROR with no data: the name exists, there is just nothing here to reach.
      rec.verdict = verdict::deny;
      rec.reason = reason::private_address;
    }
  }
  return wire::build(reply, limit);
}

boost::asio::awaitable<std::optional<std::string>> answer_query(query_context& ctx, std::span<const std::byte> packet,
                                                                const boost::asio::ip::address& client_address,
                                                                std::uint16_t client_port, bool over_udp) {
  started_query query(ctx, client_address, client_port, over_udp);
  if (query.begin(packet, co_await boost::asio::this_coro::executor)) co_return std::move(query.reply());
  co_return co_await query.finish();
}

}  // namespace airlock::dns

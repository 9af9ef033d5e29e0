#include "dns/resolver.hpp"

#include <mutex>

namespace airlock::dns {
namespace {

// ares_library_init is process-wide and not thread-safe; do it once.
int library_init() {
  static int rc = ares_library_init(ARES_LIB_INIT_ALL);
  return rc;
}

}  // namespace

std::string_view to_string(resolve_error e) noexcept {
  switch (e) {
    case resolve_error::timeout: return "timeout";
    case resolve_error::unreachable: return "unreachable";
    case resolve_error::server_failure: return "server_failure";
    case resolve_error::bad_answer: return "bad_answer";
    case resolve_error::shutting_down: return "shutting_down";
    case resolve_error::overloaded: return "overloaded";
    case resolve_error::other: return "other";
  }
  return "other";
}

resolver::resolver(boost::asio::any_io_executor ex, std::size_t max_in_flight)
    : executor_(ex), timer_(ex), max_in_flight_(max_in_flight) {}

base::result<std::unique_ptr<resolver>> resolver::create(boost::asio::any_io_executor ex, const options& opts) {
  if (int rc = library_init(); rc != ARES_SUCCESS) return std::string("c-ares init: ") + ares_strerror(rc);
  std::unique_ptr<resolver> r(new resolver(ex, opts.max_in_flight));
  ares_options o{};
  int mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB | ARES_OPT_EDNSPSZ;
  // No search list and no HOSTALIASES: airlock asks exactly the name it was given.
  // NOCHECKRESP: a SERVFAIL, REFUSED or NOTIMP comes back as the upstream's answer. Without
  // it c-ares (1.18) drops such a reply, asks again and ends with "connection refused", and
  // the line would say the upstream was unreachable when it answered.
  o.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES | ARES_FLAG_EDNS | ARES_FLAG_NOCHECKRESP;
  o.timeout = static_cast<int>(opts.timeout.count());
  o.tries = opts.tries;
  o.sock_state_cb = &resolver::on_socket_state;
  o.sock_state_cb_data = r.get();
  o.ednspsz = 1232;  // DNS Flag Day 2020: avoids IP fragmentation
  if (int rc = ares_init_options(&r->channel_, &o, mask); rc != ARES_SUCCESS)
    return std::string("c-ares channel: ") + ares_strerror(rc);
  if (!opts.servers.empty()) {
    std::string csv;
    for (const auto& s : opts.servers) csv += (csv.empty() ? "" : ",") + s.to_string();
    if (int rc = ares_set_servers_ports_csv(r->channel_, csv.c_str()); rc != ARES_SUCCESS)
      return "upstream_dns '" + csv + "': " + ares_strerror(rc);
  }
  return r;
}

resolver::~resolver() {
  *alive_ = false;
  // Completes every outstanding query with ARES_EDESTRUCTION (posted, never inline).
  if (channel_) ares_destroy(channel_);
  for (auto& [fd, w] : sockets_) {
    w->closed = true;
    boost::system::error_code ignored;
    w->descriptor.cancel(ignored);
    w->descriptor.release();
  }
}

void resolver::start(const std::string& name, std::uint16_t qtype, std::unique_ptr<pending> p) {
  std::string key = name + '/' + std::to_string(qtype);
  if (auto it = in_flight_.find(key); it != in_flight_.end()) {
    it->second->waiters.push_back(std::move(p));
    return;
  }
  if (in_flight_.size() >= max_in_flight_) {
    p->complete(resolve_error::overloaded);  // fast SERVFAIL beats a queue that never drains
    return;
  }
  auto* f = new in_flight{this, key, {}};
  f->waiters.push_back(std::move(p));
  in_flight_.emplace(std::move(key), f);
  ares_query(channel_, name.c_str(), 1 /* IN */, qtype, &resolver::on_answer, f);
  rearm_timer();
}

void resolver::on_answer(void* arg, int status, int /*timeouts*/, unsigned char* abuf, int alen) {
  std::unique_ptr<in_flight> f(static_cast<in_flight*>(arg));
  f->owner->in_flight_.erase(f->key);
  raw_answer outcome = resolve_error::other;
  // c-ares hands over the answer for every RCODE (NOCHECKRESP). NXDOMAIN and NODATA are
  // answers the client gets as they are; an upstream that failed (SERVFAIL), refused or
  // does not implement the question is a server failure: SERVFAIL to the client, never
  // cached, the line saying upstream_server_failure.
  constexpr unsigned header_size = 12;
  const unsigned rcode = abuf && alen >= static_cast<int>(header_size) ? (abuf[3] & 0x0Fu) : 0;
  if (rcode == 2 || rcode == 4 || rcode == 5) {
    outcome = resolve_error::server_failure;
  } else if (abuf && alen > 0) {
    outcome = std::string(reinterpret_cast<const char*>(abuf), static_cast<std::size_t>(alen));
  } else {
    switch (status) {
      case ARES_ETIMEOUT: outcome = resolve_error::timeout; break;
      case ARES_ECONNREFUSED: outcome = resolve_error::unreachable; break;
      case ARES_EBADRESP: outcome = resolve_error::bad_answer; break;
      case ARES_ESERVFAIL:
      case ARES_EREFUSED:
      case ARES_ENOTIMP: outcome = resolve_error::server_failure; break;
      case ARES_EDESTRUCTION:
      case ARES_ECANCELLED: outcome = resolve_error::shutting_down; break;
      default: break;
    }
  }
  const bool shutting_down = !outcome.has_value() && outcome.error() == resolve_error::shutting_down;
  if (f->owner->on_upstream_done && !shutting_down)
    f->owner->on_upstream_done(std::chrono::steady_clock::now() - f->started, outcome.has_value());
  for (auto& w : f->waiters) w->complete(outcome);
}

void resolver::on_socket_state(void* data, ares_socket_t fd, int readable, int writable) {
  auto* self = static_cast<resolver*>(data);
  auto it = self->sockets_.find(fd);
  if (!readable && !writable) {
    // c-ares is about to close fd: stop watching and let go without closing it.
    if (it == self->sockets_.end()) return;
    auto w = it->second;
    self->sockets_.erase(it);
    w->closed = true;
    boost::system::error_code ignored;
    w->descriptor.cancel(ignored);
    w->descriptor.release();
    return;
  }
  if (it == self->sockets_.end()) {
    auto w = std::make_shared<watched_socket>(self->executor_);
    boost::system::error_code ec;
    w->descriptor.assign(fd, ec);
    if (ec) return;  // c-ares times the query out; nothing else we can do
    it = self->sockets_.emplace(fd, std::move(w)).first;
  }
  it->second->want_read = readable != 0;
  it->second->want_write = writable != 0;
  self->arm(it->second, fd);
}

void resolver::arm(const std::shared_ptr<watched_socket>& w, ares_socket_t fd) {
  using boost::asio::posix::stream_descriptor;
  auto on_ready = [this, w, fd, alive = alive_](bool read_side, const boost::system::error_code& ec) {
    (read_side ? w->reading : w->writing) = false;
    if (!*alive || w->closed || ec) return;
    ares_process_fd(channel_, read_side ? fd : ARES_SOCKET_BAD, read_side ? ARES_SOCKET_BAD : fd);
    if (!w->closed) arm(w, fd);
    rearm_timer();
  };
  if (w->want_read && !w->reading) {
    w->reading = true;
    w->descriptor.async_wait(stream_descriptor::wait_read,
                             [on_ready](const boost::system::error_code& ec) { on_ready(true, ec); });
  }
  if (w->want_write && !w->writing) {
    w->writing = true;
    w->descriptor.async_wait(stream_descriptor::wait_write,
                             [on_ready](const boost::system::error_code& ec) { on_ready(false, ec); });
  }
}

void resolver::rearm_timer() {
  timeval tv{};
  if (!ares_timeout(channel_, nullptr, &tv)) {
    timer_.cancel();
    return;
  }
  timer_.expires_after(std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec));
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (!*alive || ec) return;
    ares_process_fd(channel_, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    rearm_timer();
  });
}

}  // namespace airlock::dns

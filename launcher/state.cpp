#include "launcher/state.hpp"

#include "launcher/unique_fd.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

namespace airlock::launcher {
namespace fs = std::filesystem;
namespace {

template <typename T>
boost::system::result<T, std::string> fail(std::string message) {
  return boost::system::result<T, std::string>(boost::system::in_place_error, std::move(message));
}

template <typename N>
bool parse_number(const std::string& s, N& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

// Values are single lines; a newline could forge a key, so it is refused at write time
// and never produced by airlock itself.
bool one_line(const std::string& v) { return v.find('\n') == std::string::npos; }

}  // namespace

std::string to_text(const sandbox_record& r) {
  std::string out;
  auto put = [&](std::string_view key, const std::string& value) {
    if (value.empty() || !one_line(value)) return;
    out.append(key).append("=").append(value).append("\n");
  };
  put("id", r.id);
  put("kind", r.kind);
  put("pid", r.pid != 0 ? std::to_string(r.pid) : "");
  put("start_time", r.start_time != 0 ? std::to_string(r.start_time) : "");
  put("sandbox_ip", r.sandbox_ip);
  put("gateway_ip", r.gateway_ip);
  put("netns", r.netns);
  put("netns_id", r.netns_id);
  put("gateway_netns", r.gateway_netns);
  put("veth", r.veth);
  put("nft_table", r.nft_table);
  put("guard_table", r.guard_table);
  for (const auto& c : r.cgroups) put("cgroup", c);
  put("copy_dir", r.copy_dir);
  put("session", r.session);
  put("control", r.control);
  for (const auto& s : r.saved_routes) put("saved_route", s);
  return out;
}

boost::system::result<sandbox_record, std::string> parse_record(const std::string& text) {
  sandbox_record r;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) return fail<sandbox_record>("line " + std::to_string(n) + ": expected key=value");
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "id") r.id = value;
    else if (key == "kind") r.kind = value;
    else if (key == "pid") {
      if (!parse_number(value, r.pid)) return fail<sandbox_record>("line " + std::to_string(n) + ": bad pid");
    } else if (key == "start_time") {
      if (!parse_number(value, r.start_time)) return fail<sandbox_record>("line " + std::to_string(n) + ": bad start_time");
    } else if (key == "sandbox_ip") r.sandbox_ip = value;
    else if (key == "gateway_ip") r.gateway_ip = value;
    else if (key == "netns") r.netns = value;
    else if (key == "netns_id") r.netns_id = value;
    else if (key == "gateway_netns") r.gateway_netns = value;
    else if (key == "veth") r.veth = value;
    else if (key == "nft_table") r.nft_table = value;
    else if (key == "guard_table") r.guard_table = value;
    else if (key == "cgroup") r.cgroups.push_back(value);
    else if (key == "copy_dir") r.copy_dir = value;
    else if (key == "session") r.session = value;
    else if (key == "control") r.control = value;
    else if (key == "saved_route") r.saved_routes.push_back(value);
  }
  if (r.id.empty()) return fail<sandbox_record>("no id");
  return r;
}

std::string netns_pin_for(const std::string& id) { return "/run/netns/airlock-" + id; }
std::string veth_for(const std::string& id) { return "airlock" + id; }
std::string table_for(const std::string& id) { return "airlock_" + id; }
std::string guard_table_for(const std::string& id) { return "airlock_guard_" + id; }

std::string new_sandbox_id() {
  unsigned char b[4] = {};
  if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) {
    // getrandom on a 4-byte buffer does not fail short on Linux; mix pid and time anyway.
    const auto v = static_cast<std::uint32_t>(::getpid()) ^ static_cast<std::uint32_t>(::time(nullptr));
    std::memcpy(b, &v, sizeof b);
  }
  char out[9];
  std::snprintf(out, sizeof out, "%02x%02x%02x%02x", b[0], b[1], b[2], b[3]);
  return out;
}

std::uint64_t process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream f(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && (f >> field); ++i)
    if (i == 22) {
      std::uint64_t v = 0;
      return parse_number(field, v) ? v : 0;
    }
  return 0;
}

bool owner_alive(const sandbox_record& r) {
  if (r.pid <= 0) return false;
  const auto t = process_start_time(r.pid);
  return t != 0 && t == r.start_time;
}

boost::system::result<sandbox_record, std::string> state_store::reserve(const address_pool& pool, sandbox_record r) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return fail<sandbox_record>("cannot create " + dir_.string() + ": " + ec.message() + " (airlock run needs root)");
  unique_fd lock(::open((dir_ / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock)
    return fail<sandbox_record>("cannot open " + (dir_ / ".lock").string() + ": " + errno_text() +
                                (errno == EACCES || errno == EPERM ? " (airlock run needs root)" : ""));
  if (::flock(lock.get(), LOCK_EX) != 0) return fail<sandbox_record>("cannot lock " + (dir_ / ".lock").string() + ": " + errno_text());

  std::set<std::size_t> taken;
  std::set<std::string> ids;
  for (const auto& other : list()) {
    ids.insert(other.id);
    boost::system::error_code bad;
    const auto a = boost::asio::ip::make_address_v4(other.sandbox_ip, bad);
    if (bad) continue;
    if (auto i = pool.index_of(a)) taken.insert(*i);
  }
  auto block = pool.first_free(taken);
  if (!block)
    return fail<sandbox_record>("the address pool " + pool.to_string() + " is full (" + std::to_string(pool.capacity()) +
                                " sandboxes); run 'airlock gc' or pass a larger --pool");
  do r.id = new_sandbox_id();
  while (ids.contains(r.id));
  r.sandbox_ip = block->sandbox.to_string();
  r.gateway_ip = block->gateway.to_string();
  if (r.kind == "run") {
    r.pid = ::getpid();
    r.start_time = process_start_time(r.pid);
    r.netns = netns_pin_for(r.id);
  }
  r.veth = veth_for(r.id);
  r.nft_table = table_for(r.id);
  if (auto s = save(r); !s) return fail<sandbox_record>(s.error());
  return r;
}

boost::system::result<void, std::string> state_store::save(const sandbox_record& r) const {
  const auto file = file_for(r.id);
  const auto tmp = fs::path(file.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << to_text(r);
    out.flush();
    if (!out) return fail<void>("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) return fail<void>("cannot write " + file.string() + ": " + ec.message());
  return {};
}

void state_store::remove_record(const std::string& id) const {
  std::error_code ec;
  fs::remove(file_for(id), ec);
}

std::vector<sandbox_record> state_store::list(std::vector<std::string>* errors) const {
  std::vector<sandbox_record> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".state") continue;
    std::ifstream in(e.path());
    std::stringstream s;
    s << in.rdbuf();
    auto r = parse_record(s.str());
    if (r)
      out.push_back(std::move(*r));
    else if (errors != nullptr)
      errors->push_back(e.path().string() + ": " + r.error());
  }
  return out;
}

}  // namespace airlock::launcher

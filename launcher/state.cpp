#include "launcher/state.hpp"

#include "base/errno_text.hpp"
#include "base/small_file.hpp"
#include "base/unique_fd.hpp"

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
#include <string_view>
#include <utility>

namespace airlock::launcher {
namespace fs = std::filesystem;
namespace {

using base::fail;

template <typename N>
bool parse_number(const std::string& s, N& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

// Values are single lines; a newline could forge a key, so it is refused at write time
// and never produced by airlock itself.
bool one_line(const std::string& v) { return v.find('\n') == std::string::npos; }

}  // namespace

// The single-valued text fields, in file order; pid, start_time and the lists are apart.
constexpr std::pair<std::string_view, std::string sandbox_record::*> text_fields[] = {
    {"id", &sandbox_record::id},
    {"kind", &sandbox_record::kind},
    {"sandbox_ip", &sandbox_record::sandbox_ip},
    {"gateway_ip", &sandbox_record::gateway_ip},
    {"netns", &sandbox_record::netns},
    {"netns_id", &sandbox_record::netns_id},
    {"gateway_netns", &sandbox_record::gateway_netns},
    {"veth", &sandbox_record::veth},
    {"nft_table", &sandbox_record::nft_table},
    {"guard_table", &sandbox_record::guard_table},
    {"copy_dir", &sandbox_record::copy_dir},
    {"session", &sandbox_record::session},
    {"control", &sandbox_record::control},
};
constexpr std::pair<std::string_view, std::vector<std::string> sandbox_record::*> list_fields[] = {
    {"cgroup", &sandbox_record::cgroups},
    {"saved_route", &sandbox_record::saved_routes},
};

std::string to_text(const sandbox_record& r) {
  std::string out;
  auto put = [&](std::string_view key, const std::string& value) {
    if (value.empty() || !one_line(value)) return;
    out.append(key).append("=").append(value).append("\n");
  };
  for (const auto& [key, field] : text_fields) put(key, r.*field);
  put("pid", r.pid != 0 ? std::to_string(r.pid) : "");
  put("start_time", r.start_time != 0 ? std::to_string(r.start_time) : "");
  for (const auto& [key, field] : list_fields)
    for (const auto& v : r.*field) put(key, v);
  return out;
}

base::result<sandbox_record> parse_record(const std::string& text) {
  sandbox_record r;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) return fail<sandbox_record>("line " + std::to_string(n) + ": expected key=value");
    const std::string_view key(line.data(), eq);
    const std::string value = line.substr(eq + 1);
    bool bad_number = false;
    if (key == "pid") bad_number = !parse_number(value, r.pid);
    if (key == "start_time") bad_number = !parse_number(value, r.start_time);
    if (bad_number) return fail<sandbox_record>("line " + std::to_string(n) + ": bad " + std::string(key));
    for (const auto& [k, field] : text_fields)
      if (k == key) r.*field = value;
    for (const auto& [k, field] : list_fields)
      if (k == key) (r.*field).push_back(value);
    // Unknown keys are skipped: an older gc reads a newer record.
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
  const auto read = base::read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!read) return 0;
  const std::string& stat = *read;
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

base::result<sandbox_record> state_store::reserve(const address_pool& pool, sandbox_record r) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    return fail<sandbox_record>("cannot create " + dir_.string() + ": " + ec.message() + " (airlock run needs root)");
  base::unique_fd lock(::open((dir_ / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock)
    return fail<sandbox_record>("cannot open " + (dir_ / ".lock").string() + ": " + base::errno_text() +
                                (errno == EACCES || errno == EPERM ? " (airlock run needs root)" : ""));
  if (::flock(lock.get(), LOCK_EX) != 0)
    return fail<sandbox_record>("cannot lock " + (dir_ / ".lock").string() + ": " + base::errno_text());

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
    return fail<sandbox_record>("the address pool " + pool.to_string() + " is full (" +
                                std::to_string(pool.capacity()) +
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

base::result<void> state_store::save(const sandbox_record& r) const {
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
    const auto text = base::read_file(e.path());
    auto r = parse_record(text ? *text : std::string());
    if (r) out.push_back(std::move(*r));
    else if (errors != nullptr) errors->push_back(e.path().string() + ": " + r.error());
  }
  return out;
}

}  // namespace airlock::launcher

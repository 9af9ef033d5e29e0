// The zero-config path of `airlock run`: a whole daemon inside the launcher's process,
// on a thread of its own, serving one sandbox. The launcher talks to it through the
// same session_api as to a running daemon; every call runs on the daemon's loop.
#include "daemon/embedded.hpp"
#include "daemon/instance.hpp"

#include <thread>

namespace airlock::daemon {
namespace {

class embedded_daemon final : public control::session_api {
 public:
  explicit embedded_daemon(std::unique_ptr<instance> d) : daemon_(std::move(d)), loop_([this] { daemon_->run(); }) {}

  ~embedded_daemon() override {
    daemon_->request_stop();
    loop_.join();
  }

  control::result<control::listener_ports> listeners() override { return daemon_->ports(); }

  control::result<std::string> register_session(const control::session_request& request) override {
    auto id = daemon_->call([&] { return daemon_->registry().add(request); });
    if (!id.has_value()) return control::result<std::string>(boost::system::in_place_error, refused(id.error()));
    return control::result<std::string>(boost::system::in_place_value, *id);
  }

  control::result<control::session_totals> remove_session(const std::string& id) override {
    auto totals = daemon_->call([&] { return daemon_->registry().remove(id); });
    if (!totals.has_value()) return refused(totals.error());
    return *totals;
  }

  control::result<void> set_context(const std::string& id, const std::string& tool_call,
                                    const std::vector<std::pair<std::string, std::string>>& labels) override {
    auto done = daemon_->call([&] { return daemon_->registry().set_context(id, tool_call, labels); });
    if (!done.has_value()) return refused(done.error());
    return {};
  }

 private:
  static std::string refused(const registry_error& e) {
    std::string out;
    for (const auto& m : e.messages) out += (out.empty() ? "" : "\n  ") + m;
    return out;
  }

  std::unique_ptr<instance> daemon_;
  std::thread loop_;
};

}  // namespace

control::result<std::unique_ptr<control::session_api>> start_embedded(const embedded_options& options) {
  instance_options o;
  o.config_path = options.config_path;
  if (!options.decisions_log.empty()) o.decisions_log = options.decisions_log;
  o.embedded_listen = options.listen_address;
  auto made = instance::create(o);
  if (!made.has_value())
    return control::result<std::unique_ptr<control::session_api>>(boost::system::in_place_error, made.error().message);
  return std::unique_ptr<control::session_api>(std::make_unique<embedded_daemon>(std::move(*made)));
}

}  // namespace airlock::daemon

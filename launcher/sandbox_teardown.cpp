#include "launcher/nft_apply.hpp"
#include "launcher/sandbox_parts.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <system_error>

namespace airlock::launcher {

void sandbox::teardown() {
  std::vector<std::string> problems;
  if (child_ > 0) {
    // A failure after spawning (none today) must still not leave CMD running.
    ::kill(child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
    child_ = 0;
  }
  if (cgroup_) cgroup_->kill();
  if (daemon_.api && !session_.empty()) {
    if (auto r = daemon_.api->remove_session(session_); !r)
      problems.push_back("remove session " + session_ + ": " + r.error());
    session_.clear();
  }
  daemon_.api.reset();  // an embedded daemon drains and stops here
  mark("daemon stop");
  if (table_made_) {
    if (auto r = nft_delete_table(record_->nft_table, /*defer_close=*/true); !r) problems.push_back(r.error());
    table_made_ = false;
    mark("nft delete");
  }
  if (veth_made_ && gateway_rtnl_) {
    // The pair goes with the sandbox's namespace, which the kernel destroys (in the
    // background) once the pin and our descriptors are gone. Deleting it here would cost
    // about 20 ms of RCU grace periods on every run. Its address goes now, though: the
    // next sandbox may get the same block, and two interfaces holding the same /30 would
    // split its routes.
    if (gateway_index_ > 0)
      if (auto r = gateway_rtnl_->delete_address(gateway_index_, gateway_, address_block::prefix); !r)
        problems.push_back(r.error());
    veth_made_ = false;
    mark("address delete");
  }
  if (netns_) {
    netns_.reset();
    if (auto r = remove_netns_pin(record_->netns); !r) problems.push_back(r.error());
    mark("netns unpin");
  }
  if (cgroup_) {
    if (auto r = cgroup_->remove(); !r) problems.push_back(r.error());
    cgroup_.reset();
  }
  if (copy_made_) {
    std::error_code ec;
    fs::remove_all(record_->copy_dir, ec);
    if (ec) problems.push_back("remove " + record_->copy_dir + ": " + ec.message());
    copy_made_ = false;
  }
  if (record_) {
    if (problems.empty()) store_.remove(record_->id);
    else
      for (const auto& p : problems) say("cleanup: " + p + "; 'airlock gc' will retry");
    record_.reset();
  }
}

}  // namespace airlock::launcher

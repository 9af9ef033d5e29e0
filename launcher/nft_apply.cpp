#include "launcher/nft_apply.hpp"

#include "base/errno_text.hpp"
#include "base/trim.hpp"
#include "base/unique_fd.hpp"
#include "launcher/netlink_message.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <nftables/libnftables.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <optional>

#include <memory>

namespace airlock::launcher {
namespace {

// The deferred close of nft_delete_table: a forked helper keeps `fd` open until this
// process has exited (it waits for EOF on a pipe whose only writer is us), then closes
// it, paying the kernel's wait itself. Its stdin, stdout and stderr are closed, so a
// caller reading airlock's output does not wait for it either.
void hand_over(base::unique_fd fd) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return;  // the close below then just costs the wait
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only system calls after fork(). Everything but the two descriptors goes: the
    // sandbox's namespace, an embedded daemon's sockets, the terminal.
    const auto keep = static_cast<unsigned>(fd.get()), wait_on = static_cast<unsigned>(p[0]);
    const unsigned lo = keep < wait_on ? keep : wait_on, hi = keep < wait_on ? wait_on : keep;
    if (lo > 0) ::syscall(SYS_close_range, 0U, lo - 1, 0U);
    if (hi > lo + 1) ::syscall(SYS_close_range, lo + 1, hi - 1, 0U);
    ::syscall(SYS_close_range, hi + 1, ~0U, 0U);
    char c;
    while (::read(static_cast<int>(wait_on), &c, 1) < 0 && errno == EINTR) {
    }
    ::close(static_cast<int>(keep));
    ::_exit(0);
  }
  ::close(p[0]);
  if (pid < 0) {
    ::close(p[1]);
    return;
  }
  // Our copy goes now (not the last reference: no wait). The pipe's write end stays open
  // until exit; it is close-on-exec, and bubblewrap is long gone.
  fd.reset();
  (void)p[1];
}

struct ctx_deleter {
  void operator()(nft_ctx* c) const noexcept { nft_ctx_free(c); }
};

}  // namespace

base::result<void> nft_run(const std::string& commands) {
  std::unique_ptr<nft_ctx, ctx_deleter> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) return std::string("nftables: cannot create a context");
  nft_ctx_buffer_output(ctx.get());
  nft_ctx_buffer_error(ctx.get());
  if (nft_run_cmd_from_buffer(ctx.get(), commands.c_str()) != 0) {
    const char* buffer = nft_ctx_get_error_buffer(ctx.get());
    const auto e = base::trim(buffer != nullptr ? buffer : "");
    return "nftables: " + (e.empty() ? std::string("the kernel refused the ruleset") : std::string(e));
  }
  return {};
}

base::result<bool> nft_delete_table(const std::string& table, bool defer_close) {
  using netlink_detail::request;
  auto fail = [](std::string m) { return base::result<bool>(boost::system::in_place_error, std::move(m)); };
  base::unique_fd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER));
  if (!fd) return fail("nftables: netlink socket: " + base::errno_text());
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    return fail("nftables: netlink bind: " + base::errno_text());

  // BATCH_BEGIN, DELTABLE (acknowledged), BATCH_END: one transaction.
  nfgenmsg batch{};
  batch.nfgen_family = AF_UNSPEC;
  batch.version = NFNETLINK_V0;
  batch.res_id = htons(NFNL_SUBSYS_NFTABLES);
  request begin(NFNL_MSG_BATCH_BEGIN, 0, false), end(NFNL_MSG_BATCH_END, 0, false);
  begin.add_struct(batch);
  end.add_struct(batch);
  request del((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELTABLE, 0);
  nfgenmsg inet{};
  inet.nfgen_family = NFPROTO_INET;
  inet.version = NFNETLINK_V0;
  del.add_struct(inet);
  del.add_string(NFTA_TABLE_NAME, table);
  begin.set_seq(1);
  del.set_seq(2);
  end.set_seq(3);
  std::vector<char> out;
  for (auto* r : {&begin, &del, &end}) {
    auto& m = r->finish();
    out.insert(out.end(), m.begin(), m.end());
  }
  if (::send(fd.get(), out.data(), out.size(), 0) < 0) return fail("nftables: send: " + base::errno_text());

  std::optional<int> answer;
  std::array<char, 4096> buf{};
  for (int reads = 0; reads < 16 && !answer; ++reads) {
    const auto n = ::recv(fd.get(), buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("nftables: recv: " + base::errno_text());
    }
    netlink_detail::for_each_message(buf.data(), static_cast<std::size_t>(n),
                                     [&](const nlmsghdr& h, const char* data, std::size_t len) {
                                       if (h.nlmsg_type != NLMSG_ERROR || len < sizeof(nlmsgerr)) return true;
                                       nlmsgerr e{};
                                       std::memcpy(&e, data, sizeof e);
                                       answer = -e.error;
                                       return false;
                                     });
  }
  if (!answer) return fail("nftables: no acknowledgement for deleting table " + table);
  if (*answer != 0 && *answer != ENOENT)
    return fail("nftables: delete table " + table + ": " + base::errno_text(*answer));
  if (defer_close) hand_over(std::move(fd));
  return *answer == 0;
}

}  // namespace airlock::launcher

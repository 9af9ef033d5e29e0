#include "launcher/nft_apply.hpp"

#include <nftables/libnftables.h>

#include <memory>

namespace airlock::launcher {
namespace {

struct ctx_deleter {
  void operator()(nft_ctx* c) const noexcept { nft_ctx_free(c); }
};

std::string trimmed(const char* text) {
  std::string s = text != nullptr ? text : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

boost::system::result<void, std::string> nft_run(const std::string& commands) {
  std::unique_ptr<nft_ctx, ctx_deleter> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) return std::string("nftables: cannot create a context");
  nft_ctx_buffer_output(ctx.get());
  nft_ctx_buffer_error(ctx.get());
  if (nft_run_cmd_from_buffer(ctx.get(), commands.c_str()) != 0) {
    auto e = trimmed(nft_ctx_get_error_buffer(ctx.get()));
    return "nftables: " + (e.empty() ? std::string("the kernel refused the ruleset") : e);
  }
  return {};
}

boost::system::result<bool, std::string> nft_delete_table(const std::string& table) {
  std::unique_ptr<nft_ctx, ctx_deleter> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) return std::string("nftables: cannot create a context");
  nft_ctx_buffer_output(ctx.get());
  nft_ctx_buffer_error(ctx.get());
  const std::string cmd = "delete table inet " + table + "\n";
  if (nft_run_cmd_from_buffer(ctx.get(), cmd.c_str()) == 0) return true;
  auto e = trimmed(nft_ctx_get_error_buffer(ctx.get()));
  if (e.find("No such file or directory") != std::string::npos) return false;
  return "nftables: " + e;
}

}  // namespace airlock::launcher

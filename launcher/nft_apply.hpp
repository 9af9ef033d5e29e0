#pragma once
// Applies nftables text through libnftables, in the calling thread's network namespace.
// One call is one kernel transaction: a table is installed whole or not at all.
//
// Why libnftables and not `nft -f -`: no fork+exec per sandbox (about 2 ms each, twice per
// run), the error text comes back as a string we can put in our own message, and nothing
// depends on which `nft` is first in PATH. Why not libnftnl directly: the rules stay the
// readable text that `airlock nft-rules` prints and the tests read, parsed by the same
// parser as `nft -f`.
#include "base/result.hpp"

#include <string>

namespace airlock::launcher {

// Runs `commands` (nft syntax); the error is nft's own message.
base::result<void> nft_run(const std::string& commands);

// Deletes `table` (family inet) with one nfnetlink batch (no libnftables context, no
// cache dump); true when it existed. It is gone from the ruleset when this returns.
//
// The kernel frees what a deletion removed after an RCU grace period, and the release of
// any nfnetlink socket waits for that pending work: closing ours would cost the caller
// 5-15 ms. With `defer_close`, the socket is handed to a helper process that closes it
// once airlock has closed its own descriptors (it holds no other file and exits at once
// after), so the wait happens outside airlock's wall time. For `airlock run` only.
base::result<bool> nft_delete_table(const std::string& table, bool defer_close = false);

}  // namespace airlock::launcher

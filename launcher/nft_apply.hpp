#pragma once
// Applies nftables text through libnftables, in the calling thread's network namespace.
// One call is one kernel transaction: a table is installed whole or not at all.
//
// Why libnftables and not `nft -f -`: no fork+exec per sandbox (about 2 ms each, twice per
// run), the error text comes back as a string we can put in our own message, and nothing
// depends on which `nft` is first in PATH. Why not libnftnl directly: the rules stay the
// readable text that `airlock nft-rules` prints and the tests read, parsed by the same
// parser as `nft -f`.
#include <boost/system/result.hpp>

#include <string>

namespace airlock::launcher {

// Runs `commands` (nft syntax); the error is nft's own message.
boost::system::result<void, std::string> nft_run(const std::string& commands);

// Deletes `table` (family inet); true when it existed.
boost::system::result<bool, std::string> nft_delete_table(const std::string& table);

}  // namespace airlock::launcher

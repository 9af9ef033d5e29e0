#pragma once
// Internal to record/: how a decision line leaves when a process lookup was started for it
// (decision_line.cpp). Its own file because it is the one part of a line's way out that runs
// a coroutine: what a fuzz target that writes lines but looks up no process links instead
// is tests/fuzz/no_process_lookup.cpp.
#include "attribution/probe.hpp"
#include "record/decision.hpp"

namespace airlock::record {

// `rec` once `p` has answered (at most 200 ms), on p's loop, without holding up the caller;
// at once when no lookup was started. Out of memory, the line goes out at once without its
// process.
void emit_with_process(decision_sink& sink, const decision_record& rec, attribution::probe& p) noexcept;

}  // namespace airlock::record

#pragma once
// A decision record packed into one string: numbers as LEB128 (most are 0 or small),
// strings as a length and their bytes. About 200 bytes for a typical line against a
// 776-byte record and its strings: what an open connection keeps of its line while it
// relays (record/decision_line.hpp) and what a plain-HTTP gate keeps for its request lines.
#include "record/decision.hpp"

#include <string>
#include <string_view>

namespace airlock::record {

std::string pack(const decision_record& r);
// What pack() made; input it did not make gives a record with what could be read.
decision_record unpack(std::string_view packed);

}  // namespace airlock::record

#pragma once
// What may fail with a message for a person: the value, or the text of what went wrong. The
// one spelling of boost::system::result<T, std::string> across the tree.
//
// A result<std::string> (or of anything a string converts to) cannot tell which side a bare
// string is: say it, result<std::string>(boost::system::in_place_error, message).
#include <boost/system/result.hpp>

#include <string>

namespace airlock::base {

template <typename T>
using result = boost::system::result<T, std::string>;

}  // namespace airlock::base

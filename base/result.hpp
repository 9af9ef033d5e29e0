#pragma once
// What may fail with a message for a person: the value, or the text of what went wrong. The
// one spelling of boost::system::result<T, std::string> across the tree.
//
// A result<std::string> (or of anything a string converts to) cannot tell which side a bare
// string is: say it, with fail<std::string>(message).
#include <boost/system/result.hpp>

#include <string>
#include <utility>

namespace airlock::base {

template <typename T>
using result = boost::system::result<T, std::string>;

// A result<T> that failed with `message`, whatever T is.
template <typename T>
result<T> fail(std::string message) {
  return result<T>(boost::system::in_place_error, std::move(message));
}

}  // namespace airlock::base

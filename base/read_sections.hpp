#pragma once
// Read sections for what any thread may read while a writer replaces it (userspace RCU's
// grace period, in the form that needs no event loop): a reader marks its thread as inside
// a section for the few instructions it uses the object, and the writer, after swapping a
// pointer, waits until every section open at that moment has closed. Entering and leaving
// are two increments of the thread's own counter: no lock, and no write to a line other
// threads write. The decision lines use it (the sessions' index, daemon/session_registry.hpp):
// they are emitted from every event loop and from threads that are not loops.
//
//   // reader                                   // writer
//   read_sections::guard reading;               auto* old = ptr.exchange(next);
//   const T* p = ptr.load();                    read_sections::wait_for_readers();
//   use(*p);                                    delete old;
//
// The reader's load and the writer's exchange must be seq_cst: the reader marks, then
// loads; the writer exchanges, then looks at the marks; so one of them sees the other.
namespace airlock::base {

class read_sections {
 public:
  // This thread reads until the guard goes. Nestable; never across a co_await.
  class guard {
   public:
    guard() noexcept;
    ~guard();
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
  };

  // Returns once every section open on another thread when it was called has closed
  // (the caller's own, if it is inside one, is its own business). Bounded by the longest
  // section (a reader's few instructions), unless a reader's thread is descheduled inside
  // one: then it yields until that thread runs again.
  static void wait_for_readers();
};

}  // namespace airlock::base

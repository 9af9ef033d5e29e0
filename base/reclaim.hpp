#pragma once
// Where a structure that other threads read without a lock sends what its writer unlinked.
// The writer may not free a node a reader could still be looking at; it hands the node
// here, and the reclaimer frees it once no reader can hold it any more (base/loop_grace.hpp
// does it for the event loops). Header-only, so I/O-free libraries (the name table, which
// the judge's fuzz target links) can take one.
#include <utility>

namespace airlock::base {

class reclaimer {
 public:
  struct garbage {
    void* object;
    void (*free)(void*);
  };

  // Frees `g` once every read that began before this call has ended. Writer's thread only.
  virtual void retire(garbage g) = 0;

  template <typename T>
  void retire(T* object) {
    retire(garbage{object, [](void* p) { delete static_cast<T*>(p); }});
  }

 protected:
  ~reclaimer() = default;
};

// For a structure read only on its writer's thread (tests, tools, fuzz targets): no read
// can be running while the writer runs, so garbage goes at once.
class free_at_once final : public reclaimer {
 public:
  using reclaimer::retire;
  void retire(garbage g) override { g.free(g.object); }

  static free_at_once& instance() {
    static free_at_once one;
    return one;
  }
};

}  // namespace airlock::base

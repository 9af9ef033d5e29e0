#include "base/read_sections.hpp"
#include "unit/rising_readers.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

using airlock::base::read_sections;
using namespace std::chrono_literals;

TEST_CASE("read_sections: the writer's wait lasts until a section open on another thread closes") {
  std::promise<void> inside, release;
  auto released = release.get_future();
  std::thread reader([&] {
    const read_sections::guard reading;
    const read_sections::guard nested;  // nesting keeps the thread inside
    inside.set_value();
    released.wait();
  });
  inside.get_future().wait();
  std::atomic<bool> waited = false;
  std::thread writer([&] {
    read_sections::wait_for_readers();
    waited = true;
  });
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(waited);
  release.set_value();
  reader.join();
  writer.join();
  CHECK(waited);
}

TEST_CASE("read_sections: a section of the caller's own, and none at all, do not hold the wait up") {
  read_sections::wait_for_readers();
  const read_sections::guard reading;
  read_sections::wait_for_readers();
  CHECK(true);
}

// Under ASan (the dev preset) a reader that met a freed object fails this test.
TEST_CASE("read_sections: readers on threads while the writer swaps and frees") {
  std::atomic<const int*> current{new int(0)};
  airlock::test::rising_readers readers(2, 2000000, [&] {
    const read_sections::guard reading;
    return *current.load(std::memory_order_seq_cst);
  });
  for (int v = 1; v <= 2000; ++v) {
    const int* old = current.exchange(new int(v), std::memory_order_seq_cst);
    read_sections::wait_for_readers();
    delete old;
  }
  CHECK(readers.stop() == 0);
  delete current.load();
}

#include "base/published.hpp"
#include "unit/rising_readers.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

using airlock::base::published;

TEST_CASE("published: a thread's read after a store sees the new value, here and on another thread") {
  published<int> p(std::make_shared<const int>(1));
  CHECK(*p.load() == 1);
  CHECK(*p.load() == 1);  // kept by this thread
  p.store(std::make_shared<const int>(2));
  CHECK(*p.load() == 2);
  int seen = 0;
  std::thread([&] { seen = *p.load(); }).join();
  CHECK(seen == 2);
  p.store(nullptr);
  CHECK(p.load() == nullptr);
}

TEST_CASE("published: one made where another was destroyed is never mistaken for it") {
  std::optional<published<int>> p;
  p.emplace(std::make_shared<const int>(1));
  const void* where = &*p;
  CHECK(*p->load() == 1);
  p.reset();
  p.emplace(std::make_shared<const int>(7));  // the same storage
  REQUIRE(static_cast<const void*>(&*p) == where);
  CHECK(*p->load() == 7);
}

TEST_CASE("published: several at once in one thread, and readers on threads while it is replaced") {
  std::vector<std::unique_ptr<published<int>>> many;
  for (int i = 0; i < 9; ++i) many.push_back(std::make_unique<published<int>>(std::make_shared<const int>(i)));
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 9; ++i) CHECK(*many[static_cast<std::size_t>(i)]->load() == i);

  published<int> p(std::make_shared<const int>(0));
  airlock::test::rising_readers readers(2, 200000, [&] { return *p.load(); });
  for (int v = 1; v <= 2000; ++v) p.store(std::make_shared<const int>(v));
  CHECK(readers.stop() == 0);  // stores only go up: a thread never reads back in time
  CHECK(*p.load() == 2000);
}

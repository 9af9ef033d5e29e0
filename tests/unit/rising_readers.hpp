#pragma once
// Reader threads for tests of what one thread replaces while others read: each calls
// read() (the value the writer last published, which only rises) until told to stop or a
// bound of reads, and counts the reads that went back in time.
#include <atomic>
#include <thread>
#include <vector>

namespace airlock::test {

template <typename Read>
class rising_readers {
 public:
  rising_readers(int threads, long bound, Read read) {
    for (int t = 0; t < threads; ++t)
      threads_.emplace_back([this, bound, read] {
        int last = 0;
        for (long i = 0; i < bound && !stop_; ++i) {
          const int now = read();
          if (now < last) ++backwards_;
          last = now;
        }
      });
  }
  ~rising_readers() { stop(); }

  // Stops and joins them; how many reads went back.
  long stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    return backwards_;
  }

 private:
  std::atomic<bool> stop_ = false;
  std::atomic<long> backwards_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace airlock::test

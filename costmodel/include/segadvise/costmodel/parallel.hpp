// Work items spread over threads: independent searches (advise's schedule scoring, the optimal
// plans of a Pareto front, the fits of a leave-one-family-out accuracy run).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace segadvise {

// The threads worth starting for `items` independent items: the machine's cores, at most 8 (each
// search holds its own buffers), never more than the items.
inline std::size_t worker_threads(std::size_t items) {
  return std::min<std::size_t>({items, std::max(1u, std::thread::hardware_concurrency()), 8});
}

// work(k) for every k in [0, items), on `threads` threads (the calling one included), items handed
// out as threads free up. An exception thrown by an item is rethrown here once every thread has
// joined (an escaped one would terminate the program).
template <class Work>
void for_each_parallel(std::size_t items, std::size_t threads, Work work) {
  std::vector<std::exception_ptr> failed(items);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t k; (k = next.fetch_add(1)) < items;) {
      try {
        work(k);
      } catch (...) {
        failed[k] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(threads, items); ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace segadvise

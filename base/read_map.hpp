#pragma once
// A hash map from strings that one thread writes and every event loop reads without a lock
// (issue 5: no locks on the per-connection path). A reader follows atomic pointers to nodes
// that never change once published; a write publishes a new node (or, growing, a new bucket
// array with new nodes) and hands what it replaced to a reclaimer (base/loop_grace.hpp),
// which frees it once no read can still hold it. So a value is immutable once put, except
// for what it keeps in atomics of its own; and a reader's pointer is good until its handler
// returns, never across a co_await.
//
// Writer-only: put, erase, for_each. Readers anywhere the reclaimer waits for: find, size.
#include "base/reclaim.hpp"

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace airlock::base {

template <typename V>
class read_map {
 public:
  explicit read_map(reclaimer& r = free_at_once::instance()) : reclaim_(&r), table_(new table(16)) {}
  ~read_map() { destroy(table_.load(std::memory_order_relaxed)); }
  read_map(const read_map&) = delete;
  read_map& operator=(const read_map&) = delete;

  // The value under `key`, or null. Any loop.
  const V* find(std::string_view key) const noexcept {
    const auto h = hash(key);
    const table* t = table_.load(std::memory_order_acquire);
    for (const node* n = t->slot(h).load(std::memory_order_acquire); n != nullptr;
         n = n->next.load(std::memory_order_acquire))
      if (n->hash == h && n->key == key) return &n->value;
    return nullptr;
  }

  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }

  // Inserts, or replaces the value under `key`. Writer only.
  void put(std::string_view key, V value) {
    const auto h = hash(key);
    table* t = table_.load(std::memory_order_relaxed);
    auto* fresh = new node(h, key, std::move(value));
    auto* link = &t->slot(h);
    for (node* n = link->load(std::memory_order_relaxed); n != nullptr; n = link->load(std::memory_order_relaxed)) {
      if (n->hash == h && n->key == key) {
        fresh->next.store(n->next.load(std::memory_order_relaxed), std::memory_order_relaxed);
        link->store(fresh, std::memory_order_release);
        reclaim_->retire(n);
        return;
      }
      link = &n->next;
    }
    fresh->next.store(t->slot(h).load(std::memory_order_relaxed), std::memory_order_relaxed);
    t->slot(h).store(fresh, std::memory_order_release);
    if (size_.fetch_add(1, std::memory_order_relaxed) + 1 > t->buckets()) grow(*t);
  }

  // Removes `key`; false when it was not there. Writer only.
  bool erase(std::string_view key) {
    const auto h = hash(key);
    table* t = table_.load(std::memory_order_relaxed);
    auto* link = &t->slot(h);
    for (node* n = link->load(std::memory_order_relaxed); n != nullptr; n = link->load(std::memory_order_relaxed)) {
      if (n->hash == h && n->key == key) {
        link->store(n->next.load(std::memory_order_relaxed), std::memory_order_release);
        size_.fetch_sub(1, std::memory_order_relaxed);
        reclaim_->retire(n);
        return true;
      }
      link = &n->next;
    }
    return false;
  }

  // f(key, value) for every entry. Writer only, and f must not put or erase (collect the
  // keys, then change them).
  template <typename F>
  void for_each(F&& f) const {
    const table* t = table_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < t->buckets(); ++i)
      for (const node* n = t->slots[i].load(std::memory_order_relaxed); n != nullptr;
           n = n->next.load(std::memory_order_relaxed))
        f(static_cast<const std::string&>(n->key), static_cast<const V&>(n->value));
  }

 private:
  struct node {
    node(std::size_t h, std::string_view k, V v) : hash(h), key(k), value(std::move(v)) {}
    const std::size_t hash;
    const std::string key;
    const V value;
    std::atomic<node*> next{nullptr};
  };
  struct table {
    explicit table(std::size_t n) : mask(n - 1), slots(new std::atomic<node*>[n]()) {}
    std::size_t buckets() const noexcept { return mask + 1; }
    std::atomic<node*>& slot(std::size_t h) const noexcept { return slots[h & mask]; }
    const std::size_t mask;  // buckets - 1, a power of two less one
    const std::unique_ptr<std::atomic<node*>[]> slots;
  };

  static std::size_t hash(std::string_view key) noexcept { return std::hash<std::string_view>{}(key); }

  static void destroy(table* t) noexcept {
    for (std::size_t i = 0; i < t->buckets(); ++i) {
      for (node* n = t->slots[i].load(std::memory_order_relaxed); n != nullptr;) {
        node* next = n->next.load(std::memory_order_relaxed);
        delete n;
        n = next;
      }
    }
    delete t;
  }

  // Twice the buckets, with copies of every node: readers may be walking the old chains,
  // so they are left as they are and retired whole.
  void grow(table& old) {
    auto* bigger = new table(old.buckets() * 2);
    for (std::size_t i = 0; i < old.buckets(); ++i) {
      for (const node* n = old.slots[i].load(std::memory_order_relaxed); n != nullptr;
           n = n->next.load(std::memory_order_relaxed)) {
        auto* copy = new node(n->hash, n->key, n->value);
        copy->next.store(bigger->slot(n->hash).load(std::memory_order_relaxed), std::memory_order_relaxed);
        bigger->slot(n->hash).store(copy, std::memory_order_relaxed);
      }
    }
    table_.store(bigger, std::memory_order_release);
    reclaim_->retire(garbage_of(&old));
  }

  static reclaimer::garbage garbage_of(table* t) noexcept {
    return {t, [](void* p) { destroy(static_cast<table*>(p)); }};
  }

  reclaimer* reclaim_;
  std::atomic<table*> table_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace airlock::base

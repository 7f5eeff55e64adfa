#pragma once
// A move-only `void()` callable with a small inline buffer: what the engine runs for an event.
// std::function would demand copyable callables and may allocate; lambdas capturing a pointer
// and an index (the common case here) fit the inline buffer, so scheduling never allocates.

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace trainsim::des {

class EventHandler {
 public:
  static constexpr std::size_t kInlineBytes = 32;

  EventHandler() noexcept = default;

  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, EventHandler>>>
  EventHandler(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert implicitly
    construct(std::forward<F>(f));
  }

  // Replaces the callable with `f`, built in place (no intermediate handler to relocate).
  template <typename F>
  void emplace(F&& f) {
    reset();
    if constexpr (std::is_same_v<std::decay_t<F>, EventHandler>) {
      *this = std::forward<F>(f);  // an rvalue handler (copying one does not compile)
    } else {
      construct(std::forward<F>(f));
    }
  }

  EventHandler(EventHandler&& other) noexcept : ops_(other.ops_) {
    if (ops_ != nullptr) {
      ops_->relocate(other.storage_, storage_);
      other.ops_ = nullptr;
    }
  }

  EventHandler& operator=(EventHandler&& other) noexcept {
    if (this != &other) {
      reset();
      ops_ = other.ops_;
      if (ops_ != nullptr) {
        ops_->relocate(other.storage_, storage_);
        other.ops_ = nullptr;
      }
    }
    return *this;
  }

  EventHandler(const EventHandler&) = delete;
  EventHandler& operator=(const EventHandler&) = delete;

  ~EventHandler() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  void operator()() { ops_->invoke(storage_); }

  // Destroys the callable (empty afterwards).
  void reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  template <typename F>
  void construct(F&& f) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_r_v<void, Fn&>, "an event handler is called as void()");
    if constexpr (fits_inline<Fn>()) {
      ::new (static_cast<void*>(storage_)) Fn(std::forward<F>(f));
      ops_ = &kInlineOps<Fn>;
    } else {
      ::new (static_cast<void*>(storage_)) Fn*(new Fn(std::forward<F>(f)));
      ops_ = &kHeapOps<Fn>;
    }
  }

  struct Ops {
    void (*invoke)(void* storage);
    void (*relocate)(void* from, void* to) noexcept;  // move-construct into `to`, destroy `from`
    void (*destroy)(void* storage) noexcept;
  };

  template <typename Fn>
  static constexpr bool fits_inline() {
    return sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<Fn>;
  }

  template <typename Fn>
  static constexpr Ops kInlineOps{
      [](void* s) { (*std::launder(static_cast<Fn*>(s)))(); },
      [](void* from, void* to) noexcept {
        Fn* src = std::launder(static_cast<Fn*>(from));
        ::new (to) Fn(std::move(*src));
        src->~Fn();
      },
      [](void* s) noexcept { std::launder(static_cast<Fn*>(s))->~Fn(); }};

  template <typename Fn>
  static constexpr Ops kHeapOps{
      [](void* s) { (**std::launder(static_cast<Fn**>(s)))(); },
      [](void* from, void* to) noexcept {
        ::new (to) Fn*(*std::launder(static_cast<Fn**>(from)));
      },
      [](void* s) noexcept { delete *std::launder(static_cast<Fn**>(s)); }};

  alignas(std::max_align_t) unsigned char storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace trainsim::des

// Allocation-free callable wrappers for the launch path: InlineFn (owning, move-only, inline storage)
// and FunctionRef (non-owning view), so issuing a kernel costs no heap allocation in the common case.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace npu_sim {

// An owning, move-only callable with `Cap` bytes of inline storage. A callable that fits (and is
// nothrow-movable) lives inside the object; a larger one is put on the heap, so any size works. The
// call operator is const: a kernel body is invoked concurrently by several core threads and must not
// mutate its captures.
template <typename Sig, std::size_t Cap>
class InlineFn;

template <typename R, typename... Args, std::size_t Cap>
class InlineFn<R(Args...), Cap> {
 public:
  InlineFn() noexcept = default;
  InlineFn(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): like std::function

  template <typename F, typename D = std::decay_t<F>,
            typename = std::enable_if_t<!std::is_same_v<D, InlineFn> && std::is_invocable_r_v<R, const D&, Args...>>>
  InlineFn(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert implicitly, as to std::function
    if constexpr (is_empty_checkable<D>::value) {
      if (!static_cast<bool>(f)) return;  // an empty std::function / null function pointer stays empty
    }
    if constexpr (fits_inline<D>()) {
      ::new (static_cast<void*>(buf_)) D(std::forward<F>(f));
      ops_ = &kInlineOps<D>;
    } else {
      ::new (static_cast<void*>(buf_)) D*(new D(std::forward<F>(f)));
      ops_ = &kHeapOps<D>;
    }
  }

  InlineFn(InlineFn&& o) noexcept : ops_(o.ops_) {
    if (ops_ != nullptr) {
      ops_->move(buf_, o.buf_);
      o.ops_ = nullptr;
    }
  }
  InlineFn& operator=(InlineFn&& o) noexcept {
    if (this != &o) {
      reset();
      if (o.ops_ != nullptr) {
        o.ops_->move(buf_, o.buf_);
        ops_ = o.ops_;
        o.ops_ = nullptr;
      }
    }
    return *this;
  }
  InlineFn& operator=(std::nullptr_t) noexcept {
    reset();
    return *this;
  }
  InlineFn(const InlineFn&) = delete;
  InlineFn& operator=(const InlineFn&) = delete;
  ~InlineFn() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }
  R operator()(Args... args) const { return ops_->call(buf_, std::forward<Args>(args)...); }

  // Destroys the held callable (releasing what it captured); the wrapper becomes empty.
  void reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(buf_);
      ops_ = nullptr;
    }
  }

 private:
  struct Ops {
    R (*call)(const unsigned char*, Args&&...);
    void (*move)(unsigned char* dst, unsigned char* src) noexcept;  // move-constructs dst, destroys src
    void (*destroy)(unsigned char*) noexcept;
  };

  template <typename D, typename = void>
  struct is_empty_checkable : std::false_type {};
  template <typename D>
  struct is_empty_checkable<D, std::void_t<decltype(static_cast<bool>(std::declval<const D&>()))>>
      : std::true_type {};

  template <typename D>
  static constexpr bool fits_inline() {
    return sizeof(D) <= Cap && alignof(D) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<D>;
  }

  template <typename D>
  static constexpr Ops kInlineOps = {
      [](const unsigned char* b, Args&&... a) -> R {
        return (*std::launder(reinterpret_cast<const D*>(b)))(std::forward<Args>(a)...);
      },
      [](unsigned char* dst, unsigned char* src) noexcept {
        D* s = std::launder(reinterpret_cast<D*>(src));
        ::new (static_cast<void*>(dst)) D(std::move(*s));
        s->~D();
      },
      [](unsigned char* b) noexcept { std::launder(reinterpret_cast<D*>(b))->~D(); },
  };
  template <typename D>
  static constexpr Ops kHeapOps = {
      [](const unsigned char* b, Args&&... a) -> R {
        return (**std::launder(reinterpret_cast<D* const*>(b)))(std::forward<Args>(a)...);
      },
      [](unsigned char* dst, unsigned char* src) noexcept {
        ::new (static_cast<void*>(dst)) D*(*std::launder(reinterpret_cast<D**>(src)));
      },
      [](unsigned char* b) noexcept { delete *std::launder(reinterpret_cast<D**>(b)); },
  };

  const Ops* ops_ = nullptr;
  alignas(std::max_align_t) unsigned char buf_[Cap];
};

// A non-owning reference to a callable (valid while the referenced callable lives): passes a kernel
// body down to the core pool without copying or allocating.
template <typename Sig>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(const F& f) noexcept  // NOLINT(google-explicit-constructor)
      : obj_(static_cast<const void*>(&f)),
        call_([](const void* o, Args&&... a) -> R { return (*static_cast<const F*>(o))(std::forward<Args>(a)...); }) {}
  R operator()(Args... args) const { return call_(obj_, std::forward<Args>(args)...); }

 private:
  const void* obj_;
  R (*call_)(const void*, Args&&...);
};

}  // namespace npu_sim

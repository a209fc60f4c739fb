// What blocking.c and waits.c share: the checks' state, whether a call made now is checked, the
// reporter, and the wrappers' macros (see blocking.c for what is caught and why).
#ifndef LO_BLOCKING_H
#define LO_BLOCKING_H

#include "lo_internal.h"

#include <dlfcn.h>

typedef void *(*lo_current_queue_t)(void);

// Hidden: the agent, preloaded into a program that links Liftoff, keeps state of its own (the
// program's definitions would otherwise stand in for the agent's).
#define LO_BLOCKING_SHARED __attribute__((visibility("hidden")))

extern _Atomic pid_t lo_g_ui_tid LO_BLOCKING_SHARED;
// libdispatch's current queue and its main queue, looked up when the checks are first armed.
extern _Atomic(lo_current_queue_t) lo_g_current_queue LO_BLOCKING_SHARED;
extern void *_Atomic lo_g_main_queue LO_BLOCKING_SHARED;
extern _Atomic int lo_g_main_queue_on_workers LO_BLOCKING_SHARED;
extern _Atomic int lo_g_blocking_armed LO_BLOCKING_SHARED;
extern __thread int lo_t_blocking_reporting __attribute__((tls_model("initial-exec"))) LO_BLOCKING_SHARED;
extern __thread int lo_t_blocking_exempt __attribute__((tls_model("initial-exec"))) LO_BLOCKING_SHARED;

// The UI thread: the one the rules name, else the main thread.
static inline __attribute__((always_inline)) pid_t lo_ui_tid(void) {
    pid_t ui = atomic_load_explicit(&lo_g_ui_tid, memory_order_relaxed);
    return ui != 0 ? ui : lo_g_main_tid;
}

// Whether the calling thread runs where UI work does: the rules' main thread, or Dispatch's main queue.
// Inlined into every wrapper: a call off the UI thread while the checks are armed costs a few loads.
static inline __attribute__((always_inline)) int lo_in_ui_context(void) {
    if (lo_tid() == lo_ui_tid()) return 1;
    if (!atomic_load_explicit(&lo_g_main_queue_on_workers, memory_order_relaxed)) return 0;
    lo_current_queue_t current = atomic_load_explicit(&lo_g_current_queue, memory_order_relaxed);
    void *main_queue = atomic_load_explicit(&lo_g_main_queue, memory_order_relaxed);
    return current != NULL && main_queue != NULL && current() == main_queue;
}

// Whether a call made now is checked: armed, in the UI context, and not the reporter's own. Off
// the UI context a call stops at the thread's id (and, after dispatch_main, libdispatch's answer).
// Neither answer is marked unlikely: during a launch the checks are armed, and the compiler would
// move an unlikely answer out of line, a call and a return on every call the program makes.
static inline __attribute__((always_inline)) int lo_checking(void) {
    if (atomic_load_explicit(&lo_g_blocking_armed, memory_order_relaxed) <= 0) return 0;
    return lo_in_ui_context() && !lo_t_blocking_reporting && !lo_t_blocking_exempt;
}

// Hands a call that broke `rule` to the registered reporter, on the calling thread.
LO_BLOCKING_SHARED void lo_report(int rule, const char *operation, uint64_t waited_ns, void *caller);

// The C library's function that `name` stands for, found once (by the constructors, before any
// signal handler may call one: dlsym is not safe there).
#define LO_REAL(type, name)                                                                      \
    static _Atomic(type) real_##name;                                                            \
    __attribute__((noinline)) static type lo_resolve_##name(void) {                              \
        type function = (type)dlsym(RTLD_NEXT, #name);                                           \
        if (function == NULL) LO_FAIL(#name " not found in the C library");                       \
        atomic_store_explicit(&real_##name, function, memory_order_relaxed);                     \
        return function;                                                                         \
    }                                                                                            \
    static inline __attribute__((always_inline)) type lo_real_##name(void) {                     \
        type function = atomic_load_explicit(&real_##name, memory_order_relaxed);                \
        return function != NULL ? function : lo_resolve_##name();                                \
    }

// Whether a call made now is certainly not checked, by loads alone: the checks are not armed, or
// the calling thread is not the UI thread and no worker drains the main queue. A wrapper that gets
// a yes jumps straight to the C library, with no frame of its own and no call; any other answer
// (a thread whose id is not cached yet among them) takes the full check.
static inline __attribute__((always_inline)) int lo_surely_unchecked(void) {
    if (atomic_load_explicit(&lo_g_blocking_armed, memory_order_relaxed) <= 0) return 1;
    pid_t tid = lo_t_tid;
    return tid != 0 && tid != lo_ui_tid() && !atomic_load_explicit(&lo_g_main_queue_on_workers, memory_order_relaxed);
}

// Each function that needs nothing after the C library's call jumps to it (musttail: even
// unoptimized, no frame of Liftoff's stays on the stack while the call blocks, so samples and
// reports show the program's caller right below the C library), or, when checking, to its
// checked form, which checks and jumps on: there the address the call returns to is still the
// program's caller's.
#define LO_CALLER __builtin_return_address(0)
#define LO_MUSTTAIL __attribute__((musttail))

// The full decision, out of line: checked, or straight to the C library.
#define LO_DECIDE(type, name, parameters, arguments)                                             \
    __attribute__((noinline)) static type lo_decide_##name parameters {                          \
        LO_MUSTTAIL return (lo_checking() ? lo_checked_##name : lo_real_##name()) arguments;      \
    }

// A wrapper's last statement: straight to the C library when the call is certainly not checked
// (loads alone, no frame), else to the full decision.
#define LO_DISPATCH(name, arguments)                                                             \
    do {                                                                                         \
        __typeof__(lo_real_##name()) lo_real = atomic_load_explicit(&real_##name, memory_order_relaxed); \
        if (lo_real != NULL && lo_surely_unchecked()) LO_MUSTTAIL return lo_real arguments;     \
        LO_MUSTTAIL return lo_decide_##name arguments;                                           \
    } while (0)

#define LO_INTERPOSE(type, name, parameters, arguments, check)                                   \
    static type lo_checked_##name parameters {                                                   \
        check;                                                                                   \
        LO_MUSTTAIL return lo_real_##name() arguments;                                           \
    }                                                                                            \
    LO_DECIDE(type, name, parameters, arguments)                                                 \
    type name parameters { LO_DISPATCH(name, arguments); }

#endif

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

// Whether the calling thread runs where UI work does: the rules' main thread, or Dispatch's main queue.
static inline int lo_in_ui_context(void) {
    pid_t ui = atomic_load_explicit(&lo_g_ui_tid, memory_order_relaxed);
    if (lo_tid() == (ui != 0 ? ui : lo_g_main_tid)) return 1;
    if (!atomic_load_explicit(&lo_g_main_queue_on_workers, memory_order_relaxed)) return 0;
    lo_current_queue_t current = atomic_load_explicit(&lo_g_current_queue, memory_order_relaxed);
    void *main_queue = atomic_load_explicit(&lo_g_main_queue, memory_order_relaxed);
    return current != NULL && main_queue != NULL && current() == main_queue;
}

// Whether a call made now is checked: armed, in the UI context, and not the reporter's own. Off
// the UI context a call stops at the thread's id (and, after dispatch_main, libdispatch's answer).
static inline int lo_checking(void) {
    if (__builtin_expect(atomic_load_explicit(&lo_g_blocking_armed, memory_order_relaxed) <= 0, 1)) return 0;
    return lo_in_ui_context() && !lo_t_blocking_reporting && !lo_t_blocking_exempt;
}

// Hands a call that broke `rule` to the registered reporter, on the calling thread.
LO_BLOCKING_SHARED void lo_report(int rule, const char *operation, uint64_t waited_ns, void *caller);

// The C library's function that `name` stands for, found once.
#define LO_REAL(type, name)                                                                      \
    static _Atomic(type) real_##name;                                                            \
    static type lo_real_##name(void) {                                                           \
        type function = atomic_load_explicit(&real_##name, memory_order_relaxed);                \
        if (function == NULL) {                                                                  \
            function = (type)dlsym(RTLD_NEXT, #name);                                            \
            if (function == NULL) LO_FAIL(#name " not found in the C library");                   \
            atomic_store_explicit(&real_##name, function, memory_order_relaxed);                 \
        }                                                                                        \
        return function;                                                                         \
    }

// Each function that needs nothing after the C library's call jumps to it (musttail: even
// unoptimized, no frame of Liftoff's stays on the stack while the call blocks, so samples and
// reports show the program's caller right below the C library), or, when checking, to its
// checked form, which checks and jumps on: there the address the call returns to is still the
// program's caller's.
#define LO_CALLER __builtin_return_address(0)
#define LO_MUSTTAIL __attribute__((musttail))

#define LO_INTERPOSE(type, name, parameters, arguments, check)                                   \
    static type lo_checked_##name parameters {                                                   \
        check;                                                                                   \
        LO_MUSTTAIL return lo_real_##name() arguments;                                           \
    }                                                                                            \
    type name parameters { LO_MUSTTAIL return (lo_checking() ? lo_checked_##name : lo_real_##name()) arguments; }

#endif

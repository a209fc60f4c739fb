// Code with a known shape for the symbolizer's tests: the lines marked below are looked up by
// their markers, so keep each marker on the line it names.

#include "lo_test_support.h"

__attribute__((noinline)) static uintptr_t lo_test_return_address(void) {
    return (uintptr_t)__builtin_return_address(0);
}

static inline __attribute__((always_inline)) uintptr_t lo_test_inlined_callee(void) {
    return lo_test_return_address(); // marker: callee line
}

uintptr_t lo_test_inlined_return_address(void) {
    return lo_test_inlined_callee(); // marker: caller line
}

#include <sys/epoll.h>

int lo_test_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int lo_test_epoll_wait(int epoll, int timeout_ms) {
    struct epoll_event event;
    return epoll_wait(epoll, &event, 1, timeout_ms);
}

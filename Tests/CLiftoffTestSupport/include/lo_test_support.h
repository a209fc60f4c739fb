#ifndef LO_TEST_SUPPORT_H
#define LO_TEST_SUPPORT_H

#include <stdint.h>

/// A return address inside a function that the compiler always inlines (even unoptimized) into
/// `lo_test_inlined_return_address`, for tests of inlined frames and source lines.
uintptr_t lo_test_inlined_return_address(void);

/// A new epoll instance (close-on-exec), or -1: Swift's Glibc module has no epoll.
int lo_test_epoll_create(void);

/// `epoll_wait` on `epoll` for one event with `timeout_ms`, as an event loop calls it.
int lo_test_epoll_wait(int epoll, int timeout_ms);

#endif

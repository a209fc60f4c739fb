#ifndef LO_TEST_SUPPORT_H
#define LO_TEST_SUPPORT_H

#include <stdint.h>

/// A return address inside a function that the compiler always inlines (even unoptimized) into
/// `lo_test_inlined_return_address`, for tests of inlined frames and source lines.
uintptr_t lo_test_inlined_return_address(void);

#endif

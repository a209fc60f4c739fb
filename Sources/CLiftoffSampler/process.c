// Process helpers Swift cannot call directly (syscall(2) is variadic).

#include <sys/syscall.h>
#include <unistd.h>

#include "lo_sampler.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same on every architecture */
#endif

int lo_pidfd_open(int pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

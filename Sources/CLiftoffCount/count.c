// libLiftoffCount.so: preloaded into the launches `liftoff record --count instructions` runs
// under valgrind. valgrind 3.19 writes into the signal mask a program hands sigsuspend(2), to take
// its own signals out of it, and dies when that mask is read-only: libdispatch's dispatch_main
// passes a constant one, so every Swift program with an async main (and any program that calls
// dispatch_main) crashed valgrind. This sigsuspend hands the kernel a copy on the stack instead.
// The C library alone; no constructor: it costs a counted launch the loading of one small object,
// the same on both sides.

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lo_count.h"

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    return (int)syscall(SYS_rt_sigsuspend, &copy, (long)(_NSIG / 8));
}

// Sleeps, timed waits and mutexes in the UI context (see blocking.c for the checks they share).
//
// Sleeps are always reported; poll, select and epoll waits only with a finite, non-zero timeout
// (an event loop's idle wait has none). A pthread_mutex_lock in the UI context first tries the
// lock: one that is free costs a try more, and a contended one is timed, and reported when the
// wait reached the threshold (10 ms unless lo_blocking_set_lock_threshold says otherwise):
// NSLock, std::mutex and C code's mutexes. Swift's own Mutex and Dispatch's semaphores wait on the
// kernel directly, where no call can be seen.

#include "blocking.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

typedef int (*lo_nanosleep_t)(const struct timespec *, struct timespec *);
typedef int (*lo_clock_nanosleep_t)(clockid_t, int, const struct timespec *, struct timespec *);
typedef int (*lo_usleep_t)(useconds_t);
typedef unsigned (*lo_sleep_t)(unsigned);
typedef int (*lo_poll_t)(struct pollfd *, nfds_t, int);
typedef int (*lo_ppoll_t)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*lo_select_t)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*lo_pselect_t)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
typedef int (*lo_epoll_wait_t)(int, struct epoll_event *, int, int);
typedef int (*lo_epoll_pwait_t)(int, struct epoll_event *, int, int, const sigset_t *);

typedef int (*lo_mutex_t)(pthread_mutex_t *);
LO_REAL(lo_mutex_t, pthread_mutex_lock)
LO_REAL(lo_mutex_t, pthread_mutex_trylock)
LO_REAL(lo_nanosleep_t, nanosleep)
LO_REAL(lo_clock_nanosleep_t, clock_nanosleep)
LO_REAL(lo_usleep_t, usleep)
LO_REAL(lo_sleep_t, sleep)
LO_REAL(lo_poll_t, poll)
LO_REAL(lo_ppoll_t, ppoll)
LO_REAL(lo_select_t, select)
LO_REAL(lo_pselect_t, pselect)
LO_REAL(lo_epoll_wait_t, epoll_wait)
LO_REAL(lo_epoll_pwait_t, epoll_pwait)


static void lo_check_sleep(const char *function, uint64_t ns, void *caller) {
    if (ns == 0) return;
    char operation[64];
    snprintf(operation, sizeof operation, "%s for %llu.%03llu ms", function, (unsigned long long)(ns / 1000000),
             (unsigned long long)(ns / 1000 % 1000));
    lo_report(LO_BLOCKING_SLEEP, operation, ns, caller);
}

static uint64_t lo_timespec_ns(const struct timespec *time) {
    if (time == NULL || time->tv_sec < 0 || time->tv_nsec < 0) return 0;
    if ((uint64_t)time->tv_sec > UINT64_MAX / 1000000000ull - 1) return UINT64_MAX;
    return (uint64_t)time->tv_sec * 1000000000ull + (uint64_t)time->tv_nsec;
}

// How long a clock_nanosleep waits: to an absolute time, from now.
static uint64_t lo_clock_sleep_ns(clockid_t clock, int flags, const struct timespec *duration) {
    uint64_t ns = lo_timespec_ns(duration);
    if (!(flags & TIMER_ABSTIME)) return ns;
    struct timespec now;
    uint64_t at = clock_gettime(clock, &now) == 0 ? lo_timespec_ns(&now) : ns;
    return ns > at ? ns - at : 0;
}

// A wait with a finite, non-zero timeout; `ns` UINT64_MAX for none.
static void lo_check_wait(const char *function, uint64_t ns, void *caller) {
    if (ns == 0 || ns == UINT64_MAX) return;
    lo_check_sleep(function, ns, caller);
}

static uint64_t lo_milliseconds_ns(int milliseconds) {
    return milliseconds < 0 ? UINT64_MAX : (uint64_t)milliseconds * 1000000ull;
}

static uint64_t lo_timeval_ns(const struct timeval *timeout) {
    if (timeout == NULL) return UINT64_MAX;
    if (timeout->tv_sec < 0 || timeout->tv_usec < 0) return 0;
    if ((uint64_t)timeout->tv_sec > UINT64_MAX / 1000000000ull - 1) return UINT64_MAX - 1;
    return (uint64_t)timeout->tv_sec * 1000000000ull + (uint64_t)timeout->tv_usec * 1000ull;
}

LO_INTERPOSE(int, nanosleep, (const struct timespec *duration, struct timespec *remaining), (duration, remaining),
             lo_check_sleep("nanosleep", lo_timespec_ns(duration), LO_CALLER))
LO_INTERPOSE(int, clock_nanosleep, (clockid_t clock, int flags, const struct timespec *duration, struct timespec *remaining),
             (clock, flags, duration, remaining),
             lo_check_sleep("clock_nanosleep", lo_clock_sleep_ns(clock, flags, duration), LO_CALLER))
LO_INTERPOSE(int, usleep, (useconds_t microseconds), (microseconds),
             lo_check_sleep("usleep", (uint64_t)microseconds * 1000ull, LO_CALLER))
LO_INTERPOSE(unsigned, sleep, (unsigned seconds), (seconds), lo_check_sleep("sleep", (uint64_t)seconds * 1000000000ull, LO_CALLER))
LO_INTERPOSE(int, poll, (struct pollfd *fds, nfds_t count, int timeout_ms), (fds, count, timeout_ms),
             lo_check_wait("poll", lo_milliseconds_ns(timeout_ms), LO_CALLER))
LO_INTERPOSE(int, ppoll, (struct pollfd *fds, nfds_t count, const struct timespec *timeout, const sigset_t *mask),
             (fds, count, timeout, mask), lo_check_wait("ppoll", timeout ? lo_timespec_ns(timeout) : UINT64_MAX, LO_CALLER))
LO_INTERPOSE(int, select, (int count, fd_set *reads, fd_set *writes, fd_set *errors, struct timeval *timeout),
             (count, reads, writes, errors, timeout), lo_check_wait("select", lo_timeval_ns(timeout), LO_CALLER))
LO_INTERPOSE(int, pselect,
             (int count, fd_set *reads, fd_set *writes, fd_set *errors, const struct timespec *timeout, const sigset_t *mask),
             (count, reads, writes, errors, timeout, mask),
             lo_check_wait("pselect", timeout ? lo_timespec_ns(timeout) : UINT64_MAX, LO_CALLER))
LO_INTERPOSE(int, epoll_wait, (int fd, struct epoll_event *events, int count, int timeout_ms), (fd, events, count, timeout_ms),
             lo_check_wait("epoll_wait", lo_milliseconds_ns(timeout_ms), LO_CALLER))
LO_INTERPOSE(int, epoll_pwait, (int fd, struct epoll_event *events, int count, int timeout_ms, const sigset_t *mask),
             (fd, events, count, timeout_ms, mask), lo_check_wait("epoll_pwait", lo_milliseconds_ns(timeout_ms), LO_CALLER))

static _Atomic uint64_t g_lock_threshold_ns = 10000000;

void lo_blocking_set_lock_threshold(uint64_t ns) { atomic_store_explicit(&g_lock_threshold_ns, ns, memory_order_relaxed); }

uint64_t lo_blocking_lock_threshold(void) { return atomic_load_explicit(&g_lock_threshold_ns, memory_order_relaxed); }

// A lock taken in the UI context: tried first, and timed when another thread holds it. A
// recursive mutex its thread holds, an error-checking one, a robust one whose owner died: the try
// (or the lock) answers as the lock would, that answer is returned, and nothing is reported.
// Jumped to (musttail), so that the address it returns to is the program's caller's.
static int lo_checked_pthread_mutex_lock(pthread_mutex_t *mutex) {
    int tried = lo_real_pthread_mutex_trylock()(mutex);
    if (tried != EBUSY) return tried;
    uint64_t start = lo_monotonic_ns();
    int result = lo_real_pthread_mutex_lock()(mutex);
    uint64_t waited = lo_monotonic_ns() - start;
    if (result != 0 || waited < lo_blocking_lock_threshold() || !lo_checking()) return result;
    // Reported with the mutex given back, then taken again: the reporter runs Liftoff's code (a
    // stack captured and symbolized), which must not run inside the caller's critical section,
    // where a recursive mutex would let it into the very code the caller is in the middle of.
    pthread_mutex_unlock(mutex);
    char operation[80];
    snprintf(operation, sizeof operation, "pthread_mutex_lock waited %llu.%03llu ms", (unsigned long long)(waited / 1000000),
             (unsigned long long)(waited / 1000 % 1000));
    lo_report(LO_BLOCKING_LOCK_WAIT, operation, waited, LO_CALLER);
    return lo_real_pthread_mutex_lock()(mutex);
}

LO_DECIDE(int, pthread_mutex_lock, (pthread_mutex_t *mutex), (mutex))
int pthread_mutex_lock(pthread_mutex_t *mutex) { LO_DISPATCH(pthread_mutex_lock, (mutex)); }

// The C library's functions are looked up as the program loads, before any signal handler may
// call one (dlsym is not safe there); a call made earlier, from another object's constructor,
// looks its own up.
__attribute__((constructor)) static void lo_waits_resolve(void) {
    lo_real_pthread_mutex_lock();
    lo_real_pthread_mutex_trylock();
    lo_real_nanosleep();
    lo_real_clock_nanosleep();
    lo_real_usleep();
    lo_real_sleep();
    lo_real_poll();
    lo_real_ppoll();
    lo_real_select();
    lo_real_pselect();
    lo_real_epoll_wait();
    lo_real_epoll_pwait();
}

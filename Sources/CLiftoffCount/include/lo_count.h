// The counted launch's preload (libLiftoffCount.so): sigsuspend with a writable copy of its mask.

#ifndef LO_COUNT_H
#define LO_COUNT_H

#include <signal.h>

/* sigsuspend(2), the mask copied first: valgrind may write into the one it is given. */
int sigsuspend(const sigset_t *mask);

#endif

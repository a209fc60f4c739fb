// Who is reading the loader snapshot now: every running handler, and code outside handlers that
// reads its objects. The snapshot (snapshot.c) is freed, and sampling stops (sampler.c), only
// once none is.

#include "lo_internal.h"

#include <sched.h>

static _Atomic int g_readers;

void lo_readers_enter(void) { atomic_fetch_add(&g_readers, 1); }
void lo_readers_exit(void) { atomic_fetch_sub(&g_readers, 1); }
int lo_readers_count(void) { return atomic_load(&g_readers); }

void lo_readers_wait_idle(void) {
    while (atomic_load(&g_readers) != 0) sched_yield();
}

void lo_readers_after_fork(void) { atomic_store(&g_readers, 0); }

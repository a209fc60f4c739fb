// The sample ring.
//
// Handlers write samples into a preallocated ring of slots (a bounded multi-producer queue:
// each slot's sequence number says whether it is free, being written, or full). The sampler
// thread is the only consumer: it drains the ring into the store (store.c).
//
// Slot i's sequence number starts at i. Each slot keeps it less its own index, so a new ring
// starts as the kernel's zero pages: no page of it is touched until a sample lands there (a ring
// of 256 slots is 68 pages, which every short process would otherwise clear at start).
//
// A handler must not be the first to write a page, though: it reads the slot's sequence number
// first, which maps the kernel's shared zero page, and its write then copies that page, which
// flushes the address from every CPU running the process by an interrupt between processors (tens
// of microseconds in a virtual machine, paid by the interrupted thread). At 10 kHz that was a page
// every four samples until the ring had wrapped: 7 % of a sampled thread's time. So the sampler
// thread maps pages for writing a little ahead of the handlers (lo_ring_populate_ahead), and a
// handler's write finds its page ready.

#include "lo_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static lo_slot *g_ring;
static size_t g_ring_bytes;
static uint32_t g_mask;
static _Atomic uint64_t g_head;
static uint64_t g_tail;
static size_t g_populated;   // bytes from the ring's start the sampler thread mapped for writing
static uint64_t g_head_seen; // the head at the last lo_ring_populate_ahead

int lo_ring_create(uint32_t capacity) {
    size_t bytes = (size_t)capacity * sizeof(lo_slot);
    void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring == MAP_FAILED) return -1;
    g_ring = ring;
    g_ring_bytes = bytes;
    g_mask = capacity - 1;
    atomic_store(&g_head, 0);
    g_tail = 0;
    g_populated = 0;
    g_head_seen = 0;
    return 0;
}

void lo_ring_destroy(void) {
    if (g_ring != NULL) {
        munmap(g_ring, g_ring_bytes);
        g_ring = NULL;
        g_ring_bytes = 0;
        g_populated = 0;
    }
}

size_t lo_ring_bytes(void) { return g_ring_bytes; }
int lo_ring_ready(void) { return g_ring != NULL; }

static uint64_t lo_slot_seq(lo_slot *slot, uint64_t index) {
    return atomic_load_explicit(&slot->seq, memory_order_acquire) + index;
}

static void lo_slot_set_seq(lo_slot *slot, uint64_t index, uint64_t seq) {
    atomic_store_explicit(&slot->seq, seq - index, memory_order_release);
}

void lo_ring_publish(int32_t tid, uint64_t time_ns, uint64_t task, uint64_t handler_ns, uint64_t switches,
                     uint64_t job_ns, const uintptr_t *frames, int depth, uint16_t flags, uint32_t async) {
    uint64_t pos = atomic_load_explicit(&g_head, memory_order_relaxed);
    for (;;) {
        uint64_t index = pos & g_mask;
        lo_slot *slot = &g_ring[index];
        uint64_t seq = lo_slot_seq(slot, index);
        int64_t lag = (int64_t)(seq - pos);
        if (lag == 0) {
            if (atomic_compare_exchange_weak_explicit(&g_head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                slot->time_ns = time_ns;
                slot->task = task;
                slot->handler_ns = handler_ns;
                slot->switches = switches;
                slot->job_ns = job_ns;
                slot->tid = tid;
                slot->depth = (uint16_t)depth;
                slot->flags = flags;
                slot->async = async;
                if (depth > 0) memcpy(slot->frames, frames, (size_t)depth * sizeof(uintptr_t));
                lo_slot_set_seq(slot, index, pos + 1);
                if (depth > 0) {
                    LO_COUNT(captured, 1);
                    if (flags & LO_SAMPLE_TRUNCATED) LO_COUNT(truncated, 1);
                }
                return;
            }
        } else if (lag < 0) {
            LO_COUNT(dropped, 1);
            return;
        } else {
            pos = atomic_load_explicit(&g_head, memory_order_relaxed);
        }
    }
}

void lo_ring_drain(void (*visit)(const lo_slot *slot)) {
    if (g_ring == NULL) return;
    for (;;) {
        uint64_t index = g_tail & g_mask;
        lo_slot *slot = &g_ring[index];
        if (lo_slot_seq(slot, index) != g_tail + 1) return;
        visit(slot);
        lo_slot_set_seq(slot, index, g_tail + (uint64_t)g_mask + 1);
        g_tail++;
    }
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 // Linux 5.14
#endif

void lo_ring_populate_ahead(uint32_t least) {
    if (g_ring == NULL || g_populated >= g_ring_bytes) return;
    uint64_t head = atomic_load_explicit(&g_head, memory_order_relaxed);
    // Twice what the handlers took since the last call, and at least `least` slots.
    uint64_t taken = head - g_head_seen;
    g_head_seen = head;
    uint64_t ahead = 2 * taken > least ? 2 * taken : least;
    uint64_t slots = head + ahead;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t want = slots > g_mask ? g_ring_bytes : (size_t)slots * sizeof(lo_slot);
    want = (want + page - 1) & ~(page - 1);
    if (want > g_ring_bytes) want = g_ring_bytes;
    if (want <= g_populated) return;
    if (madvise((uint8_t *)g_ring + g_populated, want - g_populated, MADV_POPULATE_WRITE) != 0) {
        // Without MADV_POPULATE_WRITE: an atomic add of 0 to each slot's sequence number in the
        // range writes every page (a slot is smaller than a page) and changes nothing a handler
        // reads or writes at the same moment.
        for (size_t at = g_populated / sizeof(lo_slot); at <= g_mask && at * sizeof(lo_slot) < want; at++) {
            atomic_fetch_add_explicit(&g_ring[at].seq, 0, memory_order_relaxed);
        }
    }
    g_populated = want;
}

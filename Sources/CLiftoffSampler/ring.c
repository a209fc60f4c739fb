// The sample ring.
//
// Handlers write samples into a preallocated ring of slots (a bounded multi-producer queue:
// each slot's sequence number says whether it is free, being written, or full). The sampler
// thread is the only consumer: it drains the ring into the store (store.c).
//
// Slot i's sequence number starts at i. Each slot keeps it less its own index, so a new ring
// starts as the kernel's zero pages: no page of it is touched until a sample lands there (a ring
// of 256 slots is 68 pages, which every short process would otherwise clear at start).

#include "lo_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static lo_slot *g_ring;
static size_t g_ring_bytes;
static uint32_t g_mask;
static _Atomic uint64_t g_head;
static uint64_t g_tail;

int lo_ring_create(uint32_t capacity) {
    size_t bytes = (size_t)capacity * sizeof(lo_slot);
    void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring == MAP_FAILED) return -1;
    g_ring = ring;
    g_ring_bytes = bytes;
    g_mask = capacity - 1;
    atomic_store(&g_head, 0);
    g_tail = 0;
    return 0;
}

void lo_ring_destroy(void) {
    if (g_ring != NULL) {
        munmap(g_ring, g_ring_bytes);
        g_ring = NULL;
        g_ring_bytes = 0;
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

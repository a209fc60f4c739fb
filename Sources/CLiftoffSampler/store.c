// The store: a growable array of words, where the sampler thread keeps the samples it drains from
// the ring (ring.c), and that Swift reads after `lo_sampler_stop` (layout in lo_sampler.h).

#include "lo_internal.h"

#include <stdlib.h>
#include <string.h>

static uint64_t *g_store;
static size_t g_store_words, g_store_capacity;
static size_t g_store_limit = LO_STORE_DEFAULT_LIMIT_WORDS;

void lo_sampler_set_store_limit(size_t words) { g_store_limit = words ? words : LO_STORE_DEFAULT_LIMIT_WORDS; }

void lo_store_reset(void) {
    free(g_store);
    g_store = NULL;
    g_store_words = g_store_capacity = 0;
}

void lo_store_append(int32_t tid, uint64_t time_ns, uint64_t task, uint64_t cpu_ns, uint64_t ticks, uint16_t flags,
                     const uintptr_t *frames, int depth, uint32_t async) {
    size_t needed = g_store_words + LO_SAMPLE_HEADER_WORDS + (size_t)depth;
    // Bounded: a program sampled for hours (a server profiled without --ready) keeps its first
    // samples, the launch, and counts the rest as dropped.
    if (needed > g_store_limit) {
        LO_COUNT(dropped, 1);
        return;
    }
    if (needed > g_store_capacity) {
        size_t capacity = g_store_capacity ? g_store_capacity : 1u << 16;
        while (capacity < needed) capacity *= 2;
        if (capacity > g_store_limit) capacity = g_store_limit;
        uint64_t *grown = realloc(g_store, capacity * sizeof(uint64_t));
        if (grown == NULL) {
            LO_COUNT(dropped, 1);
            return;
        }
        g_store = grown;
        g_store_capacity = capacity;
    }
    uint64_t *out = g_store + g_store_words;
    out[0] = (uint64_t)(uint32_t)tid | ((uint64_t)(uint16_t)depth << 32) | ((uint64_t)flags << 48);
    out[1] = time_ns;
    out[2] = task;
    out[3] = cpu_ns;
    out[4] = ticks;
    out[5] = async;
    if (depth > 0) memcpy(out + LO_SAMPLE_HEADER_WORDS, frames, (size_t)depth * sizeof(uint64_t));
    g_store_words = needed;
    if (flags & LO_SAMPLE_WAITING) LO_COUNT(waiting, ticks);
    else LO_COUNT(stored, 1);
}

const uint64_t *lo_store_words(size_t *word_count) {
    if (word_count) *word_count = g_store_words;
    return g_store;
}

size_t lo_store_bytes(void) { return g_store_capacity * sizeof(uint64_t); }

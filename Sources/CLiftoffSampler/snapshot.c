// The loader snapshot.
//
// libunwind finds unwind tables with dl_iterate_phdr, which takes the loader's lock. A thread
// interrupted inside dlopen or dlclose may hold that lock, or be half-way through taking it,
// and its handler would then wait for itself forever. So Liftoff defines dl_iterate_phdr in
// the program: outside a sampling handler it forwards to the C library; inside one it walks
// a snapshot of the loaded objects, with their program headers copied, that the sampler
// thread refreshes whenever the loader's add/remove counters change. The handler never
// takes the loader's lock.
//
// The snapshot also lists each object's executable ranges, sorted, with its unwind tables
// prepared (cfi.c), for the handler's own stack walk (walk.c).
//
// An object dlclose unmaps may still be listed until the next refresh, and its tables would fault
// a reader. So Liftoff wraps dlclose too: it marks the snapshot stale and waits for the handlers
// already running (they counted themselves before looking) before the C library unmaps anything;
// from then until a snapshot is built after the dlclose returned, handlers take no stack (the
// sample counts as skipped), and the sampler thread reads no table.

#include "lo_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__thread int lo_t_sampling __attribute__((tls_model("initial-exec")));

typedef int (*lo_phdr_callback)(struct dl_phdr_info *, size_t, void *);
typedef int (*lo_iterate_function)(lo_phdr_callback, void *);

typedef struct lo_snapshot {
    struct lo_snapshot *retired_next;
    unsigned long long adds, subs;
    size_t count, bytes;
    struct dl_phdr_info *infos;
    size_t object_count;
    lo_object *objects; // sorted by start
    int resident;       // its objects' unwind tables were made resident
    uint64_t unloads;   // g_unloads when it was built, with no dlclose under way
} lo_snapshot;

static lo_iterate_function g_real_iterate;
static _Atomic int g_unloading;       // dlclose calls under way
static _Atomic uint64_t g_unloads;    // dlclose calls begun
static _Atomic int g_rebuild;         // the next refresh builds a snapshot whatever the counters say
static _Atomic(lo_snapshot *) g_snapshot;
static lo_snapshot *g_retired;
static size_t g_snapshot_bytes, g_index_bytes;

static lo_iterate_function lo_real_iterate(void) {
    if (g_real_iterate == NULL) {
        g_real_iterate = (lo_iterate_function)dlsym(RTLD_NEXT, "dl_iterate_phdr");
        if (g_real_iterate == NULL) LO_FAIL("dl_iterate_phdr not found in the C library");
    }
    return g_real_iterate;
}

typedef int (*lo_close_function)(void *);
static _Atomic(lo_close_function) g_real_close;

int dlclose(void *handle) {
    lo_close_function real = atomic_load_explicit(&g_real_close, memory_order_relaxed);
    if (real == NULL) {
        real = (lo_close_function)dlsym(RTLD_NEXT, "dlclose");
        if (real == NULL) LO_FAIL("dlclose not found in the C library");
        atomic_store_explicit(&g_real_close, real, memory_order_relaxed);
    }
    atomic_fetch_add(&g_unloading, 1);
    atomic_fetch_add(&g_unloads, 1);
    lo_readers_wait_idle();
    int result = real(handle);
    atomic_store(&g_rebuild, 1);
    atomic_fetch_sub(&g_unloading, 1);
    return result;
}

int lo_snapshot_usable(void) {
    lo_snapshot *snapshot = atomic_load(&g_snapshot);
    return snapshot != NULL && atomic_load(&g_unloading) == 0 && atomic_load(&g_unloads) == snapshot->unloads;
}

int dl_iterate_phdr(lo_phdr_callback callback, void *data) {
    if (lo_t_sampling) {
        lo_snapshot *snapshot = atomic_load(&g_snapshot);
        if (snapshot == NULL) return 0;
        int result = 0;
        for (size_t i = 0; i < snapshot->count; i++) {
            result = callback(&snapshot->infos[i], sizeof(struct dl_phdr_info), data);
            if (result != 0) break;
        }
        return result;
    }
    return lo_real_iterate()(callback, data);
}

typedef struct lo_count_state {
    size_t objects, headers;
    unsigned long long adds, subs;
} lo_count_state;

static int lo_count_objects(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lo_count_state *state = data;
    state->objects++;
    state->headers += info->dlpi_phnum;
    state->adds = info->dlpi_adds;
    state->subs = info->dlpi_subs;
    return 0;
}

static int lo_read_counters(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lo_count_state *state = data;
    state->adds = info->dlpi_adds;
    state->subs = info->dlpi_subs;
    return 1;
}

typedef struct lo_fill_state {
    lo_snapshot *snapshot;
    ElfW(Phdr) *headers;
    size_t header_capacity, headers_used, object_capacity, range_capacity;
} lo_fill_state;

// The executable ranges of one object, each with the object's unwind tables.
static void lo_add_ranges(lo_fill_state *state, const struct dl_phdr_info *info) {
    lo_object object;
    memset(&object, 0, sizeof object);
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type == PT_GNU_EH_FRAME) object.hdr = (const uint8_t *)(info->dlpi_addr + header->p_vaddr);
    }
    for (size_t i = 0; object.hdr != NULL && i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + header->p_vaddr;
        if (header->p_type == PT_LOAD && (uintptr_t)object.hdr >= start && (uintptr_t)object.hdr < start + header->p_memsz) {
            object.tables_start = (const uint8_t *)start;
            object.tables_end = (const uint8_t *)(start + header->p_memsz);
        }
    }
    if (object.tables_start == NULL || !lo_cfi_prepare(&object)) object.hdr = NULL, object.table = NULL;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type != PT_LOAD || !(header->p_flags & PF_X) || header->p_memsz == 0) continue;
        if (state->snapshot->object_count == state->range_capacity) return;
        object.start = info->dlpi_addr + header->p_vaddr;
        object.end = object.start + header->p_memsz;
        state->snapshot->objects[state->snapshot->object_count++] = object;
    }
}

static int lo_compare_objects(const void *left, const void *right) {
    uintptr_t a = ((const lo_object *)left)->start, b = ((const lo_object *)right)->start;
    return a < b ? -1 : a > b;
}

const lo_object *lo_object_for(uintptr_t address) {
    lo_snapshot *snapshot = atomic_load(&g_snapshot);
    if (snapshot == NULL || snapshot->object_count == 0) return NULL;
    const lo_object *objects = snapshot->objects;
    size_t low = 0, high = snapshot->object_count;
    while (high - low > 1) {
        size_t middle = low + (high - low) / 2;
        if (objects[middle].start <= address) low = middle;
        else high = middle;
    }
    const lo_object *found = &objects[low];
    return address >= found->start && address < found->end ? found : NULL;
}

static int lo_fill_objects(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    lo_fill_state *state = data;
    lo_snapshot *snapshot = state->snapshot;
    if (snapshot->count == state->object_capacity) return 1;
    if (state->headers_used + info->dlpi_phnum > state->header_capacity) return 1;
    ElfW(Phdr) *copy = state->headers + state->headers_used;
    memcpy(copy, info->dlpi_phdr, info->dlpi_phnum * sizeof(ElfW(Phdr)));
    state->headers_used += info->dlpi_phnum;
    struct dl_phdr_info *out = &snapshot->infos[snapshot->count++];
    memset(out, 0, sizeof *out);
    out->dlpi_addr = info->dlpi_addr;
    out->dlpi_name = "";
    out->dlpi_phdr = copy;
    out->dlpi_phnum = info->dlpi_phnum;
    out->dlpi_adds = info->dlpi_adds;
    out->dlpi_subs = info->dlpi_subs;
    lo_add_ranges(state, info);
    return 0;
}

// A new snapshot takes over the page index (and the resident pages) of each object the previous
// one listed unchanged, so loading one library does not redo the work for all the others. A
// handler still reading the previous snapshot keeps the index it loaded: the memory moves to the
// new snapshot, which frees it.
static void lo_take_over(lo_snapshot *snapshot, lo_snapshot *previous) {
    // Both lists are sorted by start: one pass over each.
    size_t j = 0;
    for (size_t i = 0; i < snapshot->object_count; i++) {
        lo_object *object = &snapshot->objects[i];
        while (j < previous->object_count && previous->objects[j].start < object->start) j++;
        if (j == previous->object_count) return;
        lo_object *old = &previous->objects[j];
        if (old->start != object->start || old->end != object->end || old->hdr != object->hdr ||
            old->table != object->table || old->fde_count != object->fde_count) {
            continue;
        }
        uint32_t *index = atomic_exchange(&old->page_index, NULL);
        if (index != NULL) atomic_store(&object->page_index, index);
        object->resident = old->resident;
    }
}

// Frees retired snapshots once no handler can still be reading one.
static void lo_reclaim_snapshots(int force) {
    if (!force && lo_readers_count() != 0) return;
    while (g_retired != NULL) {
        lo_snapshot *next = g_retired->retired_next;
        g_snapshot_bytes -= g_retired->bytes;
        for (size_t i = 0; i < g_retired->object_count; i++) {
            uint32_t *index = atomic_load(&g_retired->objects[i].page_index);
            if (index == NULL) continue;
            g_index_bytes -= lo_cfi_index_bytes(&g_retired->objects[i]);
            free(index);
        }
        free(g_retired);
        g_retired = next;
    }
}

void lo_snapshot_refresh(void) {
    lo_snapshot *current = atomic_load(&g_snapshot);
    // A snapshot that lists no unmapped object needs no dlclose running, and none begun since.
    if (atomic_load(&g_unloading) != 0) return;
    uint64_t unloads = atomic_load(&g_unloads);
    if (atomic_exchange(&g_rebuild, 0)) current = NULL;
    if (current != NULL) {
        lo_count_state counters = {0};
        lo_real_iterate()(lo_read_counters, &counters);
        if (counters.adds == current->adds && counters.subs == current->subs) {
            lo_reclaim_snapshots(0);
            return;
        }
    }
    lo_count_state counts = {0};
    lo_real_iterate()(lo_count_objects, &counts);
    size_t objects = counts.objects + 8, headers = counts.headers + 64;
    // Every executable range is a program header, so `headers` bounds the ranges too.
    size_t bytes = sizeof(lo_snapshot) + objects * sizeof(struct dl_phdr_info) + headers * sizeof(ElfW(Phdr)) +
                   headers * sizeof(lo_object);
    lo_snapshot *snapshot = calloc(1, bytes);
    if (snapshot == NULL) return;
    snapshot->bytes = bytes;
    snapshot->infos = (struct dl_phdr_info *)(snapshot + 1);
    ElfW(Phdr) *header_space = (ElfW(Phdr) *)(snapshot->infos + objects);
    snapshot->objects = (lo_object *)(header_space + headers);
    lo_fill_state fill = {snapshot, header_space, headers, 0, objects, headers};
    lo_real_iterate()(lo_fill_objects, &fill);
    qsort(snapshot->objects, snapshot->object_count, sizeof(lo_object), lo_compare_objects);
    snapshot->unloads = unloads;
    lo_snapshot *previous = atomic_load(&g_snapshot);
    if (previous != NULL) {
        // Code that was unloaded may be replaced by other code at the same addresses.
        if (counts.subs != previous->subs) lo_cfi_forget_all();
        lo_take_over(snapshot, previous);
    }
    // The counters of the last object seen are the loader's counters for this walk.
    snapshot->adds = snapshot->count ? snapshot->infos[snapshot->count - 1].dlpi_adds : 0;
    snapshot->subs = snapshot->count ? snapshot->infos[snapshot->count - 1].dlpi_subs : 0;
    g_snapshot_bytes += bytes;
    lo_snapshot *old = atomic_exchange(&g_snapshot, snapshot);
    if (old != NULL) {
        old->retired_next = g_retired;
        g_retired = old;
    }
    lo_reclaim_snapshots(0);
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 // Linux 5.14
#endif

// A handler's first read of a page of an object's unwind tables would fault it in (the kernel maps
// file pages into a process on first touch). The sampler thread maps them instead: with
// MADV_POPULATE_READ, or where the kernel lacks it by reading a byte of each page.
void lo_snapshot_make_resident(void) {
    lo_snapshot *snapshot = atomic_load(&g_snapshot);
    if (snapshot == NULL || snapshot->resident) return;
    // Counted as a handler, so a dlclose waits until it is done, and it stops on a stale snapshot.
    lo_readers_enter();
    if (!lo_snapshot_usable()) {
        lo_readers_exit();
        return;
    }
    snapshot->resident = 1;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < snapshot->object_count; i++) {
        lo_object *object = &snapshot->objects[i];
        if (object->resident) continue;
        object->resident = 1;
        size_t index_bytes;
        uint32_t *index = atomic_load(&object->page_index) ? NULL : lo_cfi_build_index(object, &index_bytes);
        if (index != NULL) {
            g_index_bytes += index_bytes;
            atomic_store_explicit(&object->page_index, index, memory_order_release);
        }
        if (i > 0 && object->hdr == snapshot->objects[i - 1].hdr) continue;
        const uint8_t *start, *end;
        lo_cfi_span(object, &start, &end);
        if (start == NULL || end <= start) continue;
        uintptr_t first = (uintptr_t)start & ~(page - 1);
        if (madvise((void *)first, (uintptr_t)end - first, MADV_POPULATE_READ) == 0) continue;
        // The first page holds `start`, so it is mapped from its first byte.
        volatile uint8_t sink = 0;
        for (uintptr_t at = first; at < (uintptr_t)end; at += page) sink ^= *(const volatile uint8_t *)at;
        (void)sink;
    }
    lo_readers_exit();
}

void lo_snapshot_after_fork(void) {
    // The child maps what the parent did, so the parent's snapshot (with its indexed unwind
    // tables) holds, unless a dlclose was under way in another of the parent's threads: that one
    // is not under way here, and the object it was unmapping may be gone or not.
    if (atomic_exchange(&g_unloading, 0) != 0) atomic_store(&g_rebuild, 1);
}

void lo_snapshot_drop(void) {
    lo_snapshot *current = atomic_exchange(&g_snapshot, NULL);
    if (current != NULL) {
        current->retired_next = g_retired;
        g_retired = current;
    }
    lo_reclaim_snapshots(1);
}

size_t lo_snapshot_bytes(void) { return g_snapshot_bytes + g_index_bytes; }

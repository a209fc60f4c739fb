// The loader snapshot.
//
// libunwind finds unwind tables with dl_iterate_phdr, which takes the loader's lock. A thread
// interrupted inside dlopen or dlclose may hold that lock, or be half-way through taking it,
// and its handler would then wait for itself forever. So Liftoff defines dl_iterate_phdr in
// the program: outside a sampling handler it forwards to the C library; inside one it walks
// a snapshot of the loaded objects, with their program headers copied, that the sampler
// thread refreshes whenever the loader's add/remove counters change. The handler never
// takes the loader's lock.

#include "lo_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

__thread int lo_t_sampling __attribute__((tls_model("initial-exec")));

typedef int (*lo_phdr_callback)(struct dl_phdr_info *, size_t, void *);
typedef int (*lo_iterate_function)(lo_phdr_callback, void *);

typedef struct lo_snapshot {
    struct lo_snapshot *retired_next;
    unsigned long long adds, subs;
    size_t count, bytes;
    struct dl_phdr_info *infos;
} lo_snapshot;

static lo_iterate_function g_real_iterate;
static _Atomic(lo_snapshot *) g_snapshot;
static lo_snapshot *g_retired;
static size_t g_snapshot_bytes;

static lo_iterate_function lo_real_iterate(void) {
    if (g_real_iterate == NULL) {
        g_real_iterate = (lo_iterate_function)dlsym(RTLD_NEXT, "dl_iterate_phdr");
        if (g_real_iterate == NULL) LO_FAIL("dl_iterate_phdr not found in the C library");
    }
    return g_real_iterate;
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
    size_t header_capacity, headers_used, object_capacity;
} lo_fill_state;

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
    return 0;
}

// Frees retired snapshots once no handler can still be reading one.
static void lo_reclaim_snapshots(int force) {
    if (!force && lo_handler_running_count() != 0) return;
    while (g_retired != NULL) {
        lo_snapshot *next = g_retired->retired_next;
        g_snapshot_bytes -= g_retired->bytes;
        free(g_retired);
        g_retired = next;
    }
}

void lo_snapshot_refresh(void) {
    lo_snapshot *current = atomic_load(&g_snapshot);
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
    size_t bytes = sizeof(lo_snapshot) + objects * sizeof(struct dl_phdr_info) + headers * sizeof(ElfW(Phdr));
    lo_snapshot *snapshot = calloc(1, bytes);
    if (snapshot == NULL) return;
    snapshot->bytes = bytes;
    snapshot->infos = (struct dl_phdr_info *)(snapshot + 1);
    lo_fill_state fill = {snapshot, (ElfW(Phdr) *)(snapshot->infos + objects), headers, 0, objects};
    lo_real_iterate()(lo_fill_objects, &fill);
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

void lo_snapshot_drop(void) {
    lo_snapshot *current = atomic_exchange(&g_snapshot, NULL);
    if (current != NULL) {
        current->retired_next = g_retired;
        g_retired = current;
    }
    lo_reclaim_snapshots(1);
}

size_t lo_snapshot_bytes(void) { return g_snapshot_bytes; }

// The registries: the threads registered for sampling (when not every thread is sampled) and the
// threads opted out, behind one lock. sampler.c changes them, threads.c reads them each scan.

#include "lo_internal.h"

#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_registered[LO_MAX_THREADS];
static int g_registered_count;
static pid_t g_excluded[LO_MAX_THREADS];
static int g_excluded_count;

// Drops ended threads from a list (a thread may end without unregistering).
static void prune(pid_t *list, int *count) {
    uint64_t ignored;
    for (int i = 0; i < *count;) {
        if (lo_thread_cpu_ns_of(list[i], &ignored) != 0) list[i] = list[--*count];
        else i++;
    }
}

static int remove_tid(pid_t *list, int *count, pid_t tid) {
    for (int i = 0; i < *count; i++) {
        if (list[i] == tid) {
            list[i] = list[--*count];
            return 1;
        }
    }
    return 0;
}

// Adds `tid` unless the list has it; threads that ended hold no slot once it is full.
static lo_status add_tid(pid_t *list, int *count, pid_t tid) {
    for (int i = 0; i < *count; i++) {
        if (list[i] == tid) return LO_OK;
    }
    if (*count == LO_MAX_THREADS) prune(list, count);
    if (*count == LO_MAX_THREADS) return LO_ERR_TOO_MANY_THREADS;
    list[(*count)++] = tid;
    return LO_OK;
}

lo_status lo_registry_register(pid_t tid) {
    pthread_mutex_lock(&g_lock);
    remove_tid(g_excluded, &g_excluded_count, tid);
    lo_status status = add_tid(g_registered, &g_registered_count, tid);
    pthread_mutex_unlock(&g_lock);
    return status;
}

int lo_registry_unregister(pid_t tid) {
    pthread_mutex_lock(&g_lock);
    int removed = remove_tid(g_registered, &g_registered_count, tid);
    pthread_mutex_unlock(&g_lock);
    return removed;
}

lo_status lo_registry_exclude(pid_t tid) {
    pthread_mutex_lock(&g_lock);
    lo_status status = add_tid(g_excluded, &g_excluded_count, tid);
    pthread_mutex_unlock(&g_lock);
    return status;
}

int lo_registry_include(pid_t tid) {
    pthread_mutex_lock(&g_lock);
    int removed = remove_tid(g_excluded, &g_excluded_count, tid);
    pthread_mutex_unlock(&g_lock);
    return removed;
}

int lo_registry_registered_count(void) {
    pthread_mutex_lock(&g_lock);
    int count = g_registered_count;
    pthread_mutex_unlock(&g_lock);
    return count;
}

void lo_registry_copy(pid_t *registered, int *registered_count, pid_t *excluded, int *excluded_count) {
    pthread_mutex_lock(&g_lock);
    prune(g_registered, &g_registered_count);
    prune(g_excluded, &g_excluded_count);
    *registered_count = g_registered_count;
    memcpy(registered, g_registered, (size_t)g_registered_count * sizeof(pid_t));
    *excluded_count = g_excluded_count;
    memcpy(excluded, g_excluded, (size_t)g_excluded_count * sizeof(pid_t));
    pthread_mutex_unlock(&g_lock);
}

void lo_registry_after_fork(void) {
    pthread_mutex_init(&g_lock, NULL);
    g_registered_count = 0;
    g_excluded_count = 0;
}

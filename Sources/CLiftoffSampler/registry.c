// The registries: the threads registered for sampling (when not every thread is sampled) and the
// threads opted out, behind one lock. sampler.c changes them, threads.c reads them each scan.

#include "lo_internal.h"

#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t g_registered[LO_MAX_THREADS];
static int g_registered_count;
// When each registered thread registered, and its CPU clock then: the ticks between that and the
// sampler's next listing (late on a busy machine) are the thread's, and its CPU time says how many ran.
static lo_registration g_stamps[LO_MAX_THREADS];
static pid_t g_excluded[LO_MAX_THREADS];
static int g_excluded_count;

// Drops ended threads from a list (a thread may end without unregistering); `stamps`, when
// given, moves with it.
static void prune(pid_t *list, int *count, lo_registration *stamps) {
    uint64_t ignored;
    for (int i = 0; i < *count;) {
        if (lo_thread_cpu_ns_of(list[i], &ignored) != 0) {
            --*count;
            list[i] = list[*count];
            if (stamps) stamps[i] = stamps[*count];
        } else {
            i++;
        }
    }
}

static int remove_tid(pid_t *list, int *count, pid_t tid, lo_registration *stamps) {
    for (int i = 0; i < *count; i++) {
        if (list[i] == tid) {
            --*count;
            list[i] = list[*count];
            if (stamps) stamps[i] = stamps[*count];
            return 1;
        }
    }
    return 0;
}

// Adds `tid` unless the list has it; threads that ended hold no slot once it is full. Its index,
// or -1 when it was there already, or -2 when the list is full.
static int add_tid(pid_t *list, int *count, pid_t tid, lo_registration *stamps) {
    for (int i = 0; i < *count; i++) {
        if (list[i] == tid) return -1;
    }
    if (*count == LO_MAX_THREADS) prune(list, count, stamps);
    if (*count == LO_MAX_THREADS) return -2;
    list[*count] = tid;
    return (*count)++;
}

lo_status lo_registry_register(pid_t tid, lo_registration stamp) {
    pthread_mutex_lock(&g_lock);
    remove_tid(g_excluded, &g_excluded_count, tid, NULL);
    int added = add_tid(g_registered, &g_registered_count, tid, g_stamps);
    if (added >= 0) g_stamps[added] = stamp;
    pthread_mutex_unlock(&g_lock);
    return added == -2 ? LO_ERR_TOO_MANY_THREADS : LO_OK;
}

int lo_registry_unregister(pid_t tid) {
    pthread_mutex_lock(&g_lock);
    int removed = remove_tid(g_registered, &g_registered_count, tid, g_stamps);
    pthread_mutex_unlock(&g_lock);
    return removed;
}

lo_status lo_registry_exclude(pid_t tid) {
    pthread_mutex_lock(&g_lock);
    int added = add_tid(g_excluded, &g_excluded_count, tid, NULL);
    pthread_mutex_unlock(&g_lock);
    return added == -2 ? LO_ERR_TOO_MANY_THREADS : LO_OK;
}

int lo_registry_include(pid_t tid) {
    pthread_mutex_lock(&g_lock);
    int removed = remove_tid(g_excluded, &g_excluded_count, tid, NULL);
    pthread_mutex_unlock(&g_lock);
    return removed;
}

int lo_registry_registered_count(void) {
    pthread_mutex_lock(&g_lock);
    int count = g_registered_count;
    pthread_mutex_unlock(&g_lock);
    return count;
}

void lo_registry_copy(pid_t *registered, lo_registration *stamps, int *registered_count, pid_t *excluded, int *excluded_count) {
    pthread_mutex_lock(&g_lock);
    prune(g_registered, &g_registered_count, g_stamps);
    prune(g_excluded, &g_excluded_count, NULL);
    *registered_count = g_registered_count;
    memcpy(registered, g_registered, (size_t)g_registered_count * sizeof(pid_t));
    memcpy(stamps, g_stamps, (size_t)g_registered_count * sizeof(lo_registration));
    *excluded_count = g_excluded_count;
    memcpy(excluded, g_excluded, (size_t)g_excluded_count * sizeof(pid_t));
    pthread_mutex_unlock(&g_lock);
}

void lo_registry_after_fork(void) {
    pthread_mutex_init(&g_lock, NULL);
    g_registered_count = 0;
    g_excluded_count = 0;
}

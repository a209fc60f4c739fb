// The top of the sampler: stack captures outside a session's samples, and starting over in a fork
// child. It calls the files below it (sampler.c, handler.c, the unwinders); none calls it.

#include "lo_internal.h"

#include <string.h>
#include <ucontext.h>

// One stack request at a time, process-wide.
static pthread_mutex_t g_request_lock = PTHREAD_MUTEX_INITIALIZER;

int lo_capture_thread_stack(pid_t tid, uintptr_t *buffer, int capacity, int timeout_ms) {
    if (buffer == NULL || capacity <= 0) return 0;
    lo_handler_install_once();
    // A thread in a wait a handler resumed cannot take the signal until the wait ends.
    int resumed = lo_handler_resumed_stack(tid, buffer, capacity, NULL, NULL);
    if (resumed >= 0) return resumed;
    pthread_mutex_lock(&g_request_lock);
    int own_snapshot = lo_sampler_begin_request();
    int result = lo_handler_ask(tid, buffer, capacity, timeout_ms);
    lo_sampler_end_request(own_snapshot);
    pthread_mutex_unlock(&g_request_lock);
    return result;
}

__attribute__((noinline)) int lo_capture_current_stack(uintptr_t *buffer, int capacity) {
    if (buffer == NULL || capacity <= 0) return 0;
    // While a session runs, the handler's walk (its rules cached, nothing cold); libunwind else.
    ucontext_t context;
    uintptr_t walked[LO_MAX_FRAMES];
    int depth = getcontext(&context) == 0 ? lo_walk_context(&context, walked) : -1;
    if (depth > 1) {
        // The first frame is this function's own.
        int kept = depth - 1 < capacity ? depth - 1 : capacity;
        memcpy(buffer, walked + 1, (size_t)kept * sizeof(uintptr_t));
        return kept;
    }
    void *frames[LO_MAX_FRAMES + 1];
    int limit = capacity + 1 < LO_MAX_FRAMES + 1 ? capacity + 1 : LO_MAX_FRAMES + 1;
    sigset_t saved;
    lo_unwind_enter_blocking(&saved);
    int count = lo_unwind_backtrace(frames, limit);
    lo_unwind_exit_blocking(&saved);
    if (count <= 1) return 0;
    for (int i = 1; i < count; i++) buffer[i - 1] = (uintptr_t)frames[i];
    return count - 1;
}

void lo_sampler_after_fork(void) {
    pthread_mutex_init(&g_request_lock, NULL);
    lo_sampler_reset_after_fork();
}

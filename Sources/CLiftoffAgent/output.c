// What the program writes to standard output and error, with the thread that wrote it: the
// `--ready` line's writer is where the path to ready ends (output.h).
//
// `write` and `writev` reach the output hook (blocking.c); the C library's stdio functions write
// through its own internal calls, so the ones programs and runtimes call (Swift's `print` is an
// `fwrite`) are stood in for here, each noting what it was given and calling the C library's.
// Each note keeps the first LO_OUTPUT_TEXT bytes, the thread and the time, in a ring of the
// latest LO_OUTPUT_RECORDS.

#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "lo_sampler.h"
#include "output.h"
#include "recording.h"

typedef struct lo_output_record {
    _Atomic uint64_t sequence; // its number + 1 once complete; 0 while being written
    lo_output_copy write;
} lo_output_record;

static lo_output_record g_records[LO_OUTPUT_RECORDS];
static _Atomic uint64_t g_next;
static lo_output_copy g_snapshot[LO_OUTPUT_RECORDS];

static void note(int fd, const void *bytes, size_t length) {
    if (lo_agent.pid == 0 || length == 0 || bytes == NULL) return;
    uint64_t number = atomic_fetch_add_explicit(&g_next, 1, memory_order_relaxed);
    lo_output_record *record = &g_records[number % LO_OUTPUT_RECORDS];
    atomic_store_explicit(&record->sequence, 0, memory_order_release);
    record->write.time_ns = lo_monotonic_ns();
    record->write.tid = (uint32_t)lo_current_tid();
    record->write.fd = (uint16_t)fd;
    record->write.length = (uint16_t)(length < LO_OUTPUT_TEXT ? length : LO_OUTPUT_TEXT);
    memcpy(record->write.text, bytes, record->write.length);
    atomic_store_explicit(&record->sequence, number + 1, memory_order_release);
}

void lo_agent_output_begin(void) { lo_set_output_hook(note); }

void lo_agent_output_after_fork(void) { atomic_store(&g_next, 0); }

size_t lo_agent_output_count(void) { return (size_t)atomic_load_explicit(&g_next, memory_order_relaxed); }

size_t lo_agent_output_snapshot(const lo_output_copy **out) {
    uint64_t next = atomic_load_explicit(&g_next, memory_order_acquire);
    uint64_t first = next > LO_OUTPUT_RECORDS ? next - LO_OUTPUT_RECORDS : 0;
    size_t count = 0;
    for (uint64_t number = first; number < next; number++) {
        const lo_output_record *record = &g_records[number % LO_OUTPUT_RECORDS];
        if (atomic_load_explicit(&record->sequence, memory_order_acquire) != number + 1) continue;
        g_snapshot[count] = record->write;
        if (g_snapshot[count].length > LO_OUTPUT_TEXT) g_snapshot[count].length = LO_OUTPUT_TEXT;
        // Overwritten while copied: left out.
        if (atomic_load_explicit(&record->sequence, memory_order_acquire) != number + 1) continue;
        count++;
    }
    *out = g_snapshot;
    return count;
}

// ---- stdio ----------------------------------------------------------------------------------

static void *next_function(_Atomic(void *) *slot, const char *name) {
    void *function = atomic_load_explicit(slot, memory_order_relaxed);
    if (function == NULL) {
        function = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, function, memory_order_relaxed);
    }
    return function;
}

// The descriptor of stdout or stderr, else 0 (a stream the agent does not watch).
static int watched(FILE *stream) {
    if (lo_agent.pid == 0 || stream == NULL) return 0;
    if (stream == stdout) return 1;
    if (stream == stderr) return 2;
    return 0;
}

static void note_formatted(int fd, const char *format, va_list arguments) {
    char text[LO_OUTPUT_TEXT + 1];
    va_list copy;
    va_copy(copy, arguments);
    int length = vsnprintf(text, sizeof text, format, copy);
    va_end(copy);
    if (length > 0) note(fd, text, (size_t)length < LO_OUTPUT_TEXT ? (size_t)length : LO_OUTPUT_TEXT);
}

typedef size_t (*lo_fwrite_t)(const void *, size_t, size_t, FILE *);
typedef int (*lo_fputs_t)(const char *, FILE *);
typedef int (*lo_puts_t)(const char *);
typedef int (*lo_vfprintf_t)(FILE *, const char *, va_list);

size_t fwrite(const void *bytes, size_t size, size_t count, FILE *stream) {
    static _Atomic(void *) real;
    lo_fwrite_t function = (lo_fwrite_t)next_function(&real, "fwrite");
    int fd = watched(stream);
    if (fd != 0 && size > 0) note(fd, bytes, count <= SIZE_MAX / size ? size * count : SIZE_MAX);
    return function(bytes, size, count, stream);
}

int fputs(const char *text, FILE *stream) {
    static _Atomic(void *) real;
    lo_fputs_t function = (lo_fputs_t)next_function(&real, "fputs");
    int fd = watched(stream);
    if (fd != 0 && text != NULL) note(fd, text, strnlen(text, LO_OUTPUT_TEXT));
    return function(text, stream);
}

int puts(const char *text) {
    static _Atomic(void *) real;
    lo_puts_t function = (lo_puts_t)next_function(&real, "puts");
    if (watched(stdout) && text != NULL) {
        // puts ends the line itself.
        char line[LO_OUTPUT_TEXT];
        size_t length = strnlen(text, LO_OUTPUT_TEXT - 1);
        memcpy(line, text, length);
        line[length++] = '\n';
        note(1, line, length);
    }
    return function(text);
}

int vfprintf(FILE *stream, const char *format, va_list arguments) {
    static _Atomic(void *) real;
    lo_vfprintf_t function = (lo_vfprintf_t)next_function(&real, "vfprintf");
    int fd = watched(stream);
    if (fd != 0 && format != NULL) note_formatted(fd, format, arguments);
    return function(stream, format, arguments);
}

int vprintf(const char *format, va_list arguments) {
    static _Atomic(void *) real;
    lo_vfprintf_t function = (lo_vfprintf_t)next_function(&real, "vfprintf");
    if (watched(stdout) && format != NULL) note_formatted(1, format, arguments);
    return function(stdout, format, arguments);
}

int fprintf(FILE *stream, const char *format, ...) {
    static _Atomic(void *) real;
    lo_vfprintf_t function = (lo_vfprintf_t)next_function(&real, "vfprintf");
    va_list arguments;
    va_start(arguments, format);
    int fd = watched(stream);
    if (fd != 0 && format != NULL) note_formatted(fd, format, arguments);
    int result = function(stream, format, arguments);
    va_end(arguments);
    return result;
}

// With _FORTIFY_SOURCE, compilers call the checking forms instead.
typedef int (*lo_vfprintf_chk_t)(FILE *, int, const char *, va_list);

int __vfprintf_chk(FILE *stream, int flag, const char *format, va_list arguments) {
    static _Atomic(void *) real;
    lo_vfprintf_chk_t function = (lo_vfprintf_chk_t)next_function(&real, "__vfprintf_chk");
    int fd = watched(stream);
    if (fd != 0 && format != NULL) note_formatted(fd, format, arguments);
    return function(stream, flag, format, arguments);
}

int __vprintf_chk(int flag, const char *format, va_list arguments) {
    static _Atomic(void *) real;
    lo_vfprintf_chk_t function = (lo_vfprintf_chk_t)next_function(&real, "__vfprintf_chk");
    if (watched(stdout) && format != NULL) note_formatted(1, format, arguments);
    return function(stdout, flag, format, arguments);
}

int __fprintf_chk(FILE *stream, int flag, const char *format, ...) {
    static _Atomic(void *) real;
    lo_vfprintf_chk_t function = (lo_vfprintf_chk_t)next_function(&real, "__vfprintf_chk");
    va_list arguments;
    va_start(arguments, format);
    int fd = watched(stream);
    if (fd != 0 && format != NULL) note_formatted(fd, format, arguments);
    int result = function(stream, flag, format, arguments);
    va_end(arguments);
    return result;
}

int __printf_chk(int flag, const char *format, ...) {
    static _Atomic(void *) real;
    lo_vfprintf_chk_t function = (lo_vfprintf_chk_t)next_function(&real, "__vfprintf_chk");
    va_list arguments;
    va_start(arguments, format);
    if (watched(stdout) && format != NULL) note_formatted(1, format, arguments);
    int result = function(stdout, flag, format, arguments);
    va_end(arguments);
    return result;
}

int printf(const char *format, ...) {
    static _Atomic(void *) real;
    lo_vfprintf_t function = (lo_vfprintf_t)next_function(&real, "vfprintf");
    va_list arguments;
    va_start(arguments, format);
    if (watched(stdout) && format != NULL) note_formatted(1, format, arguments);
    int result = function(stdout, format, arguments);
    va_end(arguments);
    return result;
}

// The injected agent: see include/lo_agent.h.

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lo_agent.h"
#include "lo_sampler.h"

static char out_path[PATH_MAX];
static pid_t agent_pid;
static uint64_t process_start_ns;
static uint64_t premain_ns;
static uint64_t main_entry_ns;
static uint32_t rate_hz = 1000;
static atomic_int written;

static const int fatal_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define FATAL_COUNT (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous[FATAL_COUNT];

/* ---- the file ---- */

typedef struct writer {
    int fd;
    int failed;
    size_t used;
    char buffer[65536];
} writer;

static void flush(writer *w) {
    const char *at = w->buffer;
    size_t length = w->used;
    while (length > 0 && !w->failed) {
        ssize_t done = write(w->fd, at, length);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) {
            w->failed = 1;
            break;
        }
        at += done;
        length -= (size_t)done;
    }
    w->used = 0;
}

/* Buffered: the recording is a few hundred small fields, one system call each would cost more
   than the rest of the agent. */
static void put(writer *w, const void *bytes, size_t length) {
    const char *at = bytes;
    while (length > 0 && !w->failed) {
        if (w->used == sizeof w->buffer) flush(w);
        size_t room = sizeof w->buffer - w->used;
        size_t part = length < room ? length : room;
        memcpy(w->buffer + w->used, at, part);
        w->used += part;
        at += part;
        length -= part;
    }
}

static void put_word(writer *w, uint64_t word) { put(w, &word, sizeof word); }

static void put_string(writer *w, const char *bytes, size_t length) {
    static const char zeros[8];
    put_word(w, length);
    put(w, bytes, length);
    if (length % 8) put(w, zeros, 8 - length % 8);
}

typedef struct object_list {
    writer *w;
    int count;
    int index;
    char executable[PATH_MAX];
} object_list;

static int put_object(const lo_object_info *info, void *context) {
    object_list *list = context;
    if (list->w == NULL) {
        list->count++;
        return 0;
    }
    put_word(list->w, info->base);
    put_word(list->w, info->segment_count);
    for (uint32_t i = 0; i < info->segment_count; i++) {
        put_word(list->w, info->segment_start[i]);
        put_word(list->w, info->segment_end[i]);
    }
    const char *name = info->name && info->name[0] ? info->name : (list->index == 0 ? list->executable : "");
    list->index++;
    put_string(list->w, name, strlen(name));
    return 0;
}

void lo_agent_write(void) {
    if (out_path[0] == 0 || getpid() != agent_pid) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&written, &expected, 1)) return;
    uint64_t end = lo_monotonic_ns();
    lo_sampler_stop();

    char temporary[PATH_MAX + 16];
    snprintf(temporary, sizeof temporary, "%s.tmp", out_path);
    static writer w;
    w.fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    w.failed = 0;
    w.used = 0;
    if (w.fd < 0) return;

    lo_counts counts = lo_sampler_counts();
    uint64_t header[] = {
        LO_AGENT_MAGIC, LO_AGENT_FORMAT, (uint64_t)agent_pid, process_start_ns, premain_ns, main_entry_ns, end,
        rate_hz, counts.signals_sent, counts.captured, counts.dropped, counts.failed, counts.skipped,
        counts.truncated, counts.waiting, counts.unanswered, counts.threads_seen,
    };
    put(&w, header, sizeof header);

    /* The command line, NUL-separated, as /proc keeps it. */
    char command[8192];
    size_t command_length = 0;
    int cmdline = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (cmdline >= 0) {
        ssize_t got;
        while (command_length < sizeof command &&
               (got = read(cmdline, command + command_length, sizeof command - command_length)) > 0) {
            command_length += (size_t)got;
        }
        close(cmdline);
    }
    put_string(&w, command, command_length);

    /* Thread names. */
    uint64_t thread_count = 0;
    pid_t tid;
    char name[64];
    while (lo_sampler_thread_name(thread_count, &tid, name, sizeof name)) thread_count++;
    put_word(&w, thread_count);
    for (size_t i = 0; i < thread_count; i++) {
        name[0] = 0;
        lo_sampler_thread_name(i, &tid, name, sizeof name);
        put_word(&w, (uint64_t)(uint32_t)tid);
        put_string(&w, name, strnlen(name, sizeof name));
    }

    /* Loaded objects: the main executable's path from /proc/self/exe. */
    object_list objects = {NULL, 0, 0, {0}};
    ssize_t exe = readlink("/proc/self/exe", objects.executable, sizeof objects.executable - 1);
    objects.executable[exe > 0 ? exe : 0] = 0;
    lo_iterate_objects(put_object, &objects);
    put_word(&w, (uint64_t)objects.count);
    objects.w = &w;
    lo_iterate_objects(put_object, &objects);

    /* The samples. */
    size_t words = 0;
    const uint64_t *store = lo_sampler_store(&words);
    put_word(&w, words);
    if (store && words) put(&w, store, words * sizeof(uint64_t));

    /* The Swift tasks' events, five words each: kind, how it was created and thread; task;
       creator; time; end. */
    size_t events = lo_task_events(NULL, 0);
    put_word(&w, events);
    static lo_task_event batch[256];
    for (size_t start = 0; start < events;) {
        size_t copied = lo_task_events_from(start, batch, sizeof batch / sizeof batch[0]);
        if (copied == 0) break;
        for (size_t i = 0; i < copied; i++) {
            uint64_t event[5] = {
                (uint64_t)batch[i].kind | (uint64_t)batch[i].task_kind << 8 | (uint64_t)batch[i].thread << 32,
                batch[i].task, batch[i].creator, batch[i].time_ns, batch[i].end_ns,
            };
            put(&w, event, sizeof event);
        }
        start += copied;
    }

    /* No fsync: `liftoff` reads the file right away, and the rename keeps it whole. */
    flush(&w);
    int failed = w.failed;
    if (close(w.fd) != 0) failed = 1;
    if (failed || rename(temporary, out_path) != 0) unlink(temporary);
}

/* A program that links Liftoff records itself (its sampler calls this before starting): the
   agent stops sampling, gives the signals back, and writes nothing. */
void lo_agent_stand_down(void) {
    if (out_path[0] == 0 || getpid() != agent_pid) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&written, &expected, 1)) return;
    lo_sampler_stop();
    for (size_t i = 0; i < FATAL_COUNT; i++) sigaction(fatal_signals[i], &previous[i], NULL);
    out_path[0] = 0;
}

/* ---- exits and signals ---- */

static void on_exit_handler(void) { lo_agent_write(); }

static void on_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    lo_agent_write();
    /* The program's own handling: its handler, or the default action, which ends it. */
    for (size_t i = 0; i < FATAL_COUNT; i++) {
        if (fatal_signals[i] != sig) continue;
        sigaction(sig, &previous[i], NULL);
        if ((previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_sigaction) {
            previous[i].sa_sigaction(sig, info, context);
            return;
        }
        if (previous[i].sa_handler != SIG_DFL && previous[i].sa_handler != SIG_IGN) {
            previous[i].sa_handler(sig);
            return;
        }
        if (previous[i].sa_handler == SIG_IGN) return;
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        return;
    }
}

static void in_child(void) { out_path[0] = 0; }

/* Removes the agent from LD_PRELOAD, so programs this one starts are not profiled. */
static void forget_preload(void) {
    const char *preload = getenv("LD_PRELOAD");
    if (!preload) return;
    char kept[4096];
    size_t length = 0;
    const char *at = preload;
    while (*at) {
        size_t word = strcspn(at, ": ");
        int ours = word >= 19 && memmem(at, word, "libLiftoffAgent.so", 18) != NULL;
        if (!ours && word > 0 && length + word + 2 < sizeof kept) {
            if (length) kept[length++] = ':';
            memcpy(kept + length, at, word);
            length += word;
        }
        at += word;
        if (*at) at++;
    }
    kept[length] = 0;
    if (length) setenv("LD_PRELOAD", kept, 1);
    else unsetenv("LD_PRELOAD");
}

__attribute__((constructor)) static void lo_agent_start(void) {
    const char *out = getenv("LIFTOFF_AGENT_OUT");
    if (!out || !*out || strlen(out) >= sizeof out_path - 8) return;
    forget_preload();
    snprintf(out_path, sizeof out_path, "%s", out);
    unsetenv("LIFTOFF_AGENT_OUT");
    agent_pid = getpid();
    const char *rate = getenv("LIFTOFF_AGENT_RATE");
    if (rate) {
        long value = strtol(rate, NULL, 10);
        if (value >= LO_MIN_RATE_HZ && value <= LO_MAX_RATE_HZ) rate_hz = (uint32_t)value;
    }
    /* The sampler's own load-time stamp may not be taken yet: constructors run in any order. */
    uint64_t premain = lo_premain_ns();
    if (premain == 0) premain = lo_monotonic_ns();
    premain_ns = premain;
    process_start_ns = premain;
    const char *launch = getenv("LIFTOFF_LAUNCH_NS");
    if (launch) {
        unsigned long long spawn = strtoull(launch, NULL, 10);
        if (spawn > 0 && spawn <= premain && premain - spawn < 60000000000ULL) process_start_ns = spawn;
    }
    lo_config config = {rate_hz, 256, LO_SAMPLE_ALL_THREADS};
    if (lo_sampler_start(&config) != LO_OK) {
        out_path[0] = 0;
        return;
    }
    lo_sampler_register_current_thread();
    main_entry_ns = lo_monotonic_ns();
    pthread_atfork(NULL, NULL, in_child);
    atexit(on_exit_handler);
    for (size_t i = 0; i < FATAL_COUNT; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = on_signal;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        sigaction(fatal_signals[i], &action, &previous[i]);
    }
}

// The injected agent: see include/lo_agent.h. This file starts it and writes its recording;
// agent_exec.c follows the programs it runs, agent_signals.c its signals.
//
// The writer uses async-signal-safe calls only (open, read, write, rename, getdents64 and a
// hand-made decimal formatter): a recording may be written from a crash's signal handler.

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent_internal.h"
#include "lo_agent.h"
#include "lo_sampler.h"

lo_agent_state lo_agent;
pid_t lo_agent_forked_pid;
uint64_t lo_agent_fork_ns;
int lo_agent_owns_sigprof;
static atomic_int written;
static atomic_int write_done; // the recording claimed by `written` is complete
static atomic_uint program_flags;

int lo_agent_records(void) { return lo_agent.pid != 0 && (pid_t)syscall(SYS_getpid) == lo_agent.pid; }

void lo_agent_note_program_sigprof(void) { atomic_fetch_or(&program_flags, LO_AGENT_PROGRAM_SIGPROF); }

size_t lo_agent_format_u64(char *out, uint64_t value) {
    char digits[21];
    size_t count = 0;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    for (size_t i = 0; i < count; i++) out[i] = digits[count - 1 - i];
    out[count] = 0;
    return count;
}

// Sets lo_agent.path and .temporary for the current image: DIRECTORY/PID-IMAGE.rec(.tmp).
static int set_paths(void) {
    char name[64];
    size_t length = lo_agent_format_u64(name, (uint64_t)lo_agent.pid);
    name[length++] = '-';
    length += lo_agent_format_u64(name + length, lo_agent.image);
    memcpy(name + length, ".rec", 5);
    size_t directory = strlen(lo_agent.directory);
    if (directory + 1 + strlen(name) + 5 >= sizeof lo_agent.path) return 0;
    memcpy(lo_agent.path, lo_agent.directory, directory);
    lo_agent.path[directory] = '/';
    strcpy(lo_agent.path + directory + 1, name);
    strcpy(lo_agent.temporary, lo_agent.path);
    strcat(lo_agent.temporary, ".tmp");
    return 1;
}

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

// Reads a small /proc file whole into `buffer`: the bytes read.
static size_t read_file(const char *path, char *buffer, size_t capacity) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t length = 0;
    ssize_t got;
    while (length < capacity && ((got = read(fd, buffer + length, capacity - length)) > 0 || (got < 0 && errno == EINTR))) {
        if (got > 0) length += (size_t)got;
    }
    close(fd);
    return length;
}

/* ---- loaded objects, from /proc/self/maps ---- */

// dl_iterate_phdr takes the loader's lock, which a crash may have left held: the objects come
// from /proc/self/maps instead, each file's load bias read from its ELF header in memory.

#define LO_MAX_MAPPED 1024
#define LO_MAX_MAPPED_SEGMENTS 64

typedef struct mapped_object {
    uint32_t name_at, name_length;
    uint64_t base;
    int has_base;
    uint32_t segment_count;
    uint64_t segments[LO_MAX_MAPPED_SEGMENTS][2];
} mapped_object;

static mapped_object mapped[LO_MAX_MAPPED];
static char mapped_names[1 << 18];
static char maps_text[1 << 20];

static uint64_t parse_hex(const char **at, const char *end) {
    uint64_t value = 0;
    while (*at < end) {
        char c = **at;
        int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (digit < 0) break;
        value = value << 4 | (uint64_t)digit;
        (*at)++;
    }
    return value;
}

// The load bias of the ELF object whose first page is mapped at `start` (readable, `length` bytes).
static int elf_base(uint64_t start, uint64_t length, uint64_t *base) {
    if (length < sizeof(Elf64_Ehdr)) return 0;
    const Elf64_Ehdr *header = (const Elf64_Ehdr *)(uintptr_t)start;
    if (memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 || header->e_ident[EI_CLASS] != ELFCLASS64) return 0;
    if (header->e_type == ET_EXEC) {
        *base = 0;
        return 1;
    }
    if (header->e_type != ET_DYN || header->e_phentsize != sizeof(Elf64_Phdr)) return 0;
    if (header->e_phoff > length || header->e_phnum > (length - header->e_phoff) / sizeof(Elf64_Phdr)) return 0;
    const Elf64_Phdr *program = (const Elf64_Phdr *)(uintptr_t)(start + header->e_phoff);
    for (int i = 0; i < header->e_phnum; i++) {
        if (program[i].p_type != PT_LOAD) continue;
        *base = start - (program[i].p_vaddr & ~(uint64_t)4095);
        return 1;
    }
    return 0;
}

static size_t read_mapped_objects(void) {
    size_t length = read_file("/proc/self/maps", maps_text, sizeof maps_text);
    size_t count = 0, names_used = 0;
    const char *at = maps_text, *end = maps_text + length;
    while (at < end) {
        const char *line_end = memchr(at, '\n', (size_t)(end - at));
        if (line_end == NULL) line_end = end;
        const char *p = at;
        uint64_t low = parse_hex(&p, line_end);
        if (p < line_end) p++;
        uint64_t high = parse_hex(&p, line_end);
        int readable = p + 1 < line_end && p[1] == 'r';
        int executable = p + 3 < line_end && p[3] == 'x';
        p += p + 6 <= line_end ? 6 : 0;
        uint64_t offset = parse_hex(&p, line_end);
        // Device and inode, then the path.
        for (int field = 0; field < 2 && p < line_end; field++) {
            while (p < line_end && *p == ' ') p++;
            while (p < line_end && *p != ' ') p++;
        }
        while (p < line_end && *p == ' ') p++;
        const char *name = p;
        size_t name_length = (size_t)(line_end - p);
        at = line_end + 1;
        int vdso = name_length == 6 && memcmp(name, "[vdso]", 6) == 0;
        if (name_length == 0 || (name[0] != '/' && !vdso) || low >= high) continue;
        if (vdso) name = "linux-vdso.so.1", name_length = 15;
        mapped_object *object = count > 0 ? &mapped[count - 1] : NULL;
        if (object == NULL || object->name_length != name_length ||
            memcmp(mapped_names + object->name_at, name, name_length) != 0) {
            if (count == LO_MAX_MAPPED || names_used + name_length > sizeof mapped_names) continue;
            object = &mapped[count++];
            memset(object, 0, sizeof *object);
            memcpy(mapped_names + names_used, name, name_length);
            object->name_at = (uint32_t)names_used;
            object->name_length = (uint32_t)name_length;
            names_used += name_length;
        }
        if (offset == 0 && readable && !object->has_base) object->has_base = elf_base(low, high - low, &object->base);
        if (executable && object->segment_count < LO_MAX_MAPPED_SEGMENTS) {
            object->segments[object->segment_count][0] = low;
            object->segments[object->segment_count][1] = high;
            object->segment_count++;
        }
    }
    return count;
}

static void put_objects(writer *w) {
    size_t count = read_mapped_objects();
    uint64_t kept = 0;
    for (size_t i = 0; i < count; i++) kept += mapped[i].has_base && mapped[i].segment_count > 0;
    put_word(w, kept);
    for (size_t i = 0; i < count; i++) {
        const mapped_object *object = &mapped[i];
        if (!object->has_base || object->segment_count == 0) continue;
        put_word(w, object->base);
        put_word(w, object->segment_count);
        put(w, object->segments, object->segment_count * 2 * sizeof(uint64_t));
        put_string(w, mapped_names + object->name_at, object->name_length);
    }
}

/* ---- thread names ---- */

static void put_thread_names_stopped(writer *w) {
    uint64_t count = 0;
    pid_t tid;
    char name[64];
    while (lo_sampler_thread_name(count, &tid, name, sizeof name)) count++;
    put_word(w, count);
    for (size_t i = 0; i < count; i++) {
        name[0] = 0;
        lo_sampler_thread_name(i, &tid, name, sizeof name);
        put_word(w, (uint64_t)(uint32_t)tid);
        put_string(w, name, strnlen(name, sizeof name));
    }
}

// The names of the threads alive now, from /proc/self/task (the sampler's list takes a lock).
static void put_thread_names_now(writer *w) {
    static pid_t tids[4096];
    size_t count = 0;
    int directory = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory >= 0) {
        static char entries[32768];
        long got;
        while ((got = syscall(SYS_getdents64, directory, entries, sizeof entries)) > 0) {
            for (long offset = 0; offset < got;) {
                const struct dirent64 *entry = (const struct dirent64 *)(entries + offset);
                long tid = 0;
                const char *digit = entry->d_name;
                while (*digit >= '0' && *digit <= '9' && tid < (1L << 30)) tid = tid * 10 + (*digit++ - '0');
                if (*digit == 0 && tid > 0 && count < sizeof tids / sizeof tids[0]) tids[count++] = (pid_t)tid;
                offset += entry->d_reclen;
            }
        }
        close(directory);
    }
    put_word(w, count);
    for (size_t i = 0; i < count; i++) {
        char path[64] = "/proc/self/task/";
        size_t length = strlen(path);
        length += lo_agent_format_u64(path + length, (uint64_t)tids[i]);
        memcpy(path + length, "/comm", 6);
        char name[64];
        size_t name_length = read_file(path, name, sizeof name);
        while (name_length > 0 && name[name_length - 1] == '\n') name_length--;
        put_word(w, (uint64_t)(uint32_t)tids[i]);
        put_string(w, name, name_length);
    }
}

/* ---- the recording ---- */

static void write_recording(int stopped, uint32_t flags, uint64_t end) {
    static writer w;
    w.fd = open(lo_agent.temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    w.failed = 0;
    w.used = 0;
    if (w.fd < 0) return;

    lo_counts counts = lo_sampler_counts();
    uint64_t header[] = {
        LO_AGENT_MAGIC, LO_AGENT_FORMAT, (uint64_t)lo_agent.pid, (uint64_t)lo_agent.parent, lo_agent.image,
        flags | atomic_load(&program_flags), lo_agent.process_start_ns, lo_agent.premain_ns, lo_agent.main_entry_ns, end,
        lo_agent.rate_hz, counts.signals_sent, counts.captured, counts.dropped, counts.failed, counts.skipped,
        counts.truncated, counts.waiting, counts.unanswered, counts.threads_seen, lo_sampler_chained_signals(),
    };
    put(&w, header, sizeof header);

    /* The command line, NUL-separated, as /proc keeps it. */
    static char command[8192];
    put_string(&w, command, read_file("/proc/self/cmdline", command, sizeof command));

    if (stopped) put_thread_names_stopped(&w);
    else put_thread_names_now(&w);
    put_objects(&w);

    /* The samples. */
    size_t words = 0;
    const uint64_t *store = lo_sampler_store(&words);
    put_word(&w, store ? words : 0);
    if (store && words) put(&w, store, words * sizeof(uint64_t));

    /* The Swift tasks' events, five words each: kind, how it was created and thread; task;
       creator; time; end. */
    size_t events = lo_task_events(NULL, 0);
    put_word(&w, events);
    static lo_task_event batch[256];
    size_t start = 0;
    while (start < events) {
        size_t copied = lo_task_events_from(start, batch, sizeof batch / sizeof batch[0]);
        if (copied > events - start) copied = events - start;
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
    /* Fewer events than counted (a thread was writing one): zero events fill the count. */
    static const uint64_t empty[5];
    for (; start < events; start++) put(&w, empty, sizeof empty);

    /* No fsync: `liftoff` reads the file right away, and the rename keeps it whole. */
    flush(&w);
    int failed = w.failed;
    if (close(w.fd) != 0) failed = 1;
    if (failed || rename(lo_agent.temporary, lo_agent.path) != 0) unlink(lo_agent.temporary);
}

static int claim_write(void) {
    if (!lo_agent_records()) return 0;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&written, &expected, 1)) return 0;
    atomic_store(&write_done, 0);
    return 1;
}

void lo_agent_wait_for_writer(void) {
    if (!lo_agent_records() || !atomic_load(&written)) return;
    // Another thread writes the recording (an exit on the main thread while a SIGTERM arrives on
    // another): wait for it, a few seconds at most, before the signal ends the process.
    for (int i = 0; i < 4000 && !atomic_load(&write_done); i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
}

void lo_agent_write_stopped(uint32_t flags) {
    if (!claim_write()) return;
    uint64_t end = lo_monotonic_ns();
    sigset_t mask;
    lo_agent_block_exit_signals(&mask);
    lo_sampler_stop();
    write_recording(1, flags, end);
    atomic_store(&write_done, 1);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

void lo_agent_write_halted(uint32_t flags) {
    if (!claim_write()) return;
    uint64_t end = lo_monotonic_ns();
    lo_sampler_halt();
    write_recording(0, flags, end);
    atomic_store(&write_done, 1);
}

void lo_agent_write(void) { lo_agent_write_stopped(0); }

static lo_status start_sampling(void) {
    lo_config config = {lo_agent.rate_hz, 256, LO_SAMPLE_ALL_THREADS};
    lo_status status = lo_sampler_start(&config);
    if (status == LO_OK) lo_sampler_register_current_thread();
    return status;
}

void lo_agent_resume(void) {
    if (!lo_agent_records() || atomic_load(&written) == 0) return;
    lo_agent.image++;
    lo_agent.premain_ns = lo_agent.main_entry_ns = lo_monotonic_ns();
    if (!set_paths() || start_sampling() != LO_OK) {
        lo_agent.pid = 0;
        return;
    }
    atomic_store(&written, 0);
}

/* A program that links Liftoff records itself (its sampler calls this before starting): the
   agent stops sampling, gives the signals back, and writes nothing. Its children are still
   followed. */
void lo_agent_stand_down(void) {
    if (!claim_write()) return;
    lo_sampler_stop();
    lo_agent_owns_sigprof = 0;
    lo_agent_restore_exit_signals();
    lo_agent.pid = 0;
}

/* ---- start ---- */

/* When `main` starts: the C library's start calls it through __libc_start_main, which the agent
   defines to hand it `main` behind a stamp. Until then the stamp is the agent's own start. */
typedef int (*lo_main_function)(int, char **, char **);
typedef int (*lo_start_main_function)(lo_main_function, int, char **, void (*)(void), void (*)(void), void (*)(void),
                                      void *);
static lo_main_function program_main;

static int stamped_main(int argc, char **argv, char **envp) {
    if (lo_agent_records()) lo_agent.main_entry_ns = lo_monotonic_ns();
    return program_main(argc, argv, envp);
}

int __libc_start_main(lo_main_function main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
    lo_start_main_function next = (lo_start_main_function)dlsym(RTLD_NEXT, "__libc_start_main");
    program_main = main;
    return next(lo_agent.directory[0] ? stamped_main : main, argc, argv, init, fini, rtld_fini, stack_end);
}

static void on_exit_handler(void) { lo_agent_write_stopped(0); }

// A fork() child of a recorded program is recorded too, from the fork: a shell's subshell, a
// pre-forking server's worker, Python's multiprocessing. The parent's session does not exist
// here (its sampler thread stayed in the parent): the sampler starts over. A child that goes on
// to exec writes this recording first (its pre-exec phase), as any recorded program does.
static void in_child(void) {
    lo_agent_forked_pid = (pid_t)syscall(SYS_getpid);
    lo_agent_fork_ns = lo_monotonic_ns();
    if (lo_agent.pid == 0 || !lo_agent.follows_children) return;
    lo_sampler_after_fork();
    lo_agent.parent = lo_agent.pid;
    lo_agent.pid = lo_agent_forked_pid;
    lo_agent.image = 0;
    lo_agent.process_start_ns = lo_agent.premain_ns = lo_agent.main_entry_ns = lo_agent_fork_ns;
    atomic_store(&program_flags, atomic_load(&program_flags) & ~(unsigned)LO_AGENT_PROGRAM_BLOCKS_SIGPROF);
    if (!set_paths() || start_sampling() != LO_OK) {
        lo_agent.pid = 0;
        return;
    }
    atomic_store(&written, 0);
}

// LIFTOFF_AGENT_IMAGE=PID:START:IMAGE: the process an exec came from, when it started, and the
// image number the next program of that process takes.
static int parse_image(const char *text, uint64_t values[3]) {
    for (int i = 0; i < 3; i++) {
        values[i] = 0;
        if (*text < '0' || *text > '9') return 0;
        while (*text >= '0' && *text <= '9') {
            if (values[i] > UINT64_MAX / 10 - 1) return 0;
            values[i] = values[i] * 10 + (uint64_t)(*text++ - '0');
        }
        if (i < 2 && *text++ != ':') return 0;
    }
    return *text == 0;
}

__attribute__((constructor)) static void lo_agent_start(void) {
    const char *out = getenv(LO_ENV_OUT);
    if (!out || !*out || strlen(out) >= sizeof lo_agent.directory - 64) return;
    Dl_info self;
    if (dladdr((void *)lo_agent_start, &self) && self.dli_fname && strlen(self.dli_fname) < sizeof lo_agent.library) {
        strcpy(lo_agent.library, self.dli_fname);
    }
    lo_agent_find_exec();
    const char *children = getenv(LO_ENV_CHILDREN);
    lo_agent.follows_children = !(children && strcmp(children, "0") == 0);
    pid_t pid = getpid();
    /* The sampler's own load-time stamp may not be taken yet: constructors run in any order. */
    uint64_t premain = lo_premain_ns();
    if (premain == 0) premain = lo_monotonic_ns();
    uint64_t start = premain;
    uint32_t image = 0;
    uint64_t previous[3];
    const char *image_text = getenv(LO_ENV_IMAGE);
    if (image_text && parse_image(image_text, previous)) {
        if (previous[0] == (uint64_t)pid) {
            /* A program this process went on to run with exec. */
            if (previous[1] > 0 && previous[1] <= premain) start = previous[1];
            image = previous[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)previous[2];
        } else {
            /* A program another recorded process started. */
            if (!lo_agent.follows_children) return;
            if (previous[0] == 0 && previous[1] > 0 && previous[1] <= premain && premain - previous[1] < 60000000000ULL) {
                start = previous[1];
            }
        }
    } else {
        /* The program liftoff started: it says when it spawned it. */
        const char *launch = getenv(LO_ENV_LAUNCH);
        unsigned long long spawn = launch ? strtoull(launch, NULL, 10) : 0;
        if (spawn > 0 && spawn <= premain && premain - spawn < 60000000000ULL) start = spawn;
    }
    strcpy(lo_agent.directory, out);
    lo_agent.rate_hz = 1000;
    const char *rate = getenv(LO_ENV_RATE);
    if (rate) {
        long value = strtol(rate, NULL, 10);
        if (value >= LO_MIN_RATE_HZ && value <= LO_MAX_RATE_HZ) lo_agent.rate_hz = (uint32_t)value;
    }
    lo_agent.pid = pid;
    lo_agent.parent = getppid();
    lo_agent.image = image;
    lo_agent.process_start_ns = start;
    lo_agent.premain_ns = premain;
    if (!set_paths()) {
        lo_agent.pid = 0;
        return;
    }
    /* The programs this one runs with exec see where it came from: this process, this start. */
    char value[80];
    size_t length = lo_agent_format_u64(value, (uint64_t)pid);
    value[length++] = ':';
    length += lo_agent_format_u64(value + length, start);
    value[length++] = ':';
    lo_agent_format_u64(value + length, (uint64_t)image + 1);
    setenv(LO_ENV_IMAGE, value, 1);
    if (start_sampling() != LO_OK) {
        lo_agent.pid = 0;
        return;
    }
    lo_agent.main_entry_ns = lo_monotonic_ns();
    sigset_t blocked;
    if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0 && sigismember(&blocked, SIGPROF)) {
        atomic_fetch_or(&program_flags, LO_AGENT_PROGRAM_BLOCKS_SIGPROF);
    }
    lo_agent_owns_sigprof = 1;
    pthread_atfork(NULL, NULL, in_child);
    atexit(on_exit_handler);
    lo_agent_install_exit_signals();
}

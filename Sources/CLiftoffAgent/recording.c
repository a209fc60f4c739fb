// The agent's recording: its state, and the writer of DIRECTORY/PID-IMAGE.rec. Below every other
// file of the agent: it calls only the sampler.
//
// The writer uses async-signal-safe calls only (open, read, write, rename, getdents64 and a
// hand-made decimal formatter): a recording may be written from a crash's signal handler. Only at
// an exit or an exec does it also ask the loader for the loaded objects.

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recording.h"
#include "output.h"
#include "rules.h"
#include "lo_agent.h"
#include "lo_sampler.h"

lo_agent_state lo_agent;
pid_t lo_agent_forked_pid;
uint64_t lo_agent_fork_ns;
int lo_agent_owns_sigprof;
atomic_int lo_agent_crashed;
lo_agent_loader_records_t lo_agent_loader_records;
static atomic_int written;
static atomic_int write_done; // the recording claimed by `written` is complete
static atomic_uint program_flags;

int lo_agent_records(void) { return lo_agent.pid != 0 && (pid_t)syscall(SYS_getpid) == lo_agent.pid; }

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
// DIRECTORY/PID-IMAGE`suffix` in `out` (PATH_MAX bytes), with room for ".tmp" after it; 0 when
// it does not fit.
static int program_file_path(char out[PATH_MAX], const char *suffix) {
    char name[64];
    size_t length = lo_agent_format_u64(name, (uint64_t)lo_agent.pid);
    name[length++] = '-';
    length += lo_agent_format_u64(name + length, lo_agent.image);
    strcpy(name + length, suffix);
    size_t directory = strlen(lo_agent.directory);
    if (directory + 1 + strlen(name) + 5 >= PATH_MAX) return 0;
    memcpy(out, lo_agent.directory, directory);
    out[directory] = '/';
    strcpy(out + directory + 1, name);
    return 1;
}

int lo_agent_set_paths(void) {
    if (!program_file_path(lo_agent.path, ".rec")) return 0;
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

// Writes `length` bytes at `at` whole: 0 when a write failed (a full disk, a closed file).
static int write_all(int fd, const char *at, size_t length) {
    while (length > 0) {
        ssize_t done = write(fd, at, length);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) return 0;
        at += done;
        length -= (size_t)done;
    }
    return 1;
}

static void flush(writer *w) {
    if (!w->failed && !write_all(w->fd, w->buffer, w->used)) w->failed = 1;
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

/* ---- loaded objects ---- */

// At an exit or an exec the loader lists them (dl_iterate_phdr, no system call). In a signal
// handler its lock may be held by the interrupted code, so there, or when the loader names an
// object by a relative path, they come from /proc/self/maps, each file's load bias read from its
// ELF header in memory (which costs the kernel a path walk per mapping).

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
static size_t names_used;

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
    size_t length = lo_read_proc_file("/proc/self/maps", maps_text, sizeof maps_text);
    size_t count = 0;
    names_used = 0;
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

static int add_loaded_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    size_t *count = data;
    const char *name = info->dlpi_name;
    size_t name_length = name ? strlen(name) : 0;
    static char program[4096];
    if (name_length == 0) {
        // The program itself: the loader names it by no path.
        if (*count != 0) return 0;
        ssize_t length = readlink("/proc/self/exe", program, sizeof program);
        if (length <= 0 || (size_t)length >= sizeof program) return 1;
        name = program;
        name_length = (size_t)length;
    } else if (name[0] != '/' && strcmp(name, "linux-vdso.so.1") != 0) {
        return 1;
    }
    if (*count == LO_MAX_MAPPED || names_used + name_length > sizeof mapped_names) return 0;
    mapped_object *object = &mapped[*count];
    object->segment_count = 0;
    object->has_base = 1;
    object->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && object->segment_count < LO_MAX_MAPPED_SEGMENTS; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || !(segment->p_flags & PF_X) || segment->p_memsz == 0) continue;
        uint64_t low = info->dlpi_addr + segment->p_vaddr;
        uint64_t high = low + segment->p_memsz;
        object->segments[object->segment_count][0] = low & ~(uint64_t)4095;
        object->segments[object->segment_count][1] = (high + 4095) & ~(uint64_t)4095;
        object->segment_count++;
    }
    memcpy(mapped_names + names_used, name, name_length);
    object->name_at = (uint32_t)names_used;
    object->name_length = (uint32_t)name_length;
    names_used += name_length;
    (*count)++;
    return 0;
}

// The loader's objects, or 0 when one cannot be named by an absolute path.
static size_t loaded_objects(void) {
    size_t count = 0;
    names_used = 0;
    return dl_iterate_phdr(add_loaded_object, &count) == 0 ? count : 0;
}

static void put_objects(writer *w, int from_loader) {
    size_t count = from_loader ? loaded_objects() : 0;
    if (count == 0) count = read_mapped_objects();
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

static void put_thread_names_stopped(writer *w, const lo_sampler_source *source) {
    uint64_t count = 0;
    pid_t tid;
    char name[64];
    while (source->thread_name(count, &tid, name, sizeof name)) count++;
    put_word(w, count);
    for (size_t i = 0; i < count; i++) {
        name[0] = 0;
        source->thread_name(i, &tid, name, sizeof name);
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
        size_t name_length = lo_read_proc_file(path, name, sizeof name);
        while (name_length > 0 && name[name_length - 1] == '\n') name_length--;
        put_word(w, (uint64_t)(uint32_t)tids[i]);
        put_string(w, name, name_length);
    }
}

/* ---- the recording ---- */

// Writes the recording of `pid` from `source`'s store: the agent's own sampler, or the sampler of
// a program that records itself (lo_agent_write_program).
// `from_loader`: not in a signal handler, so the loader can list the objects.
int lo_agent_recording_is_empty(void) {
    const lo_sampler_source *source = lo_sampler_this_source();
    size_t words = 0;
    const uint64_t *store = source->store(&words);
    if (store != NULL && words > 0) return 0;
    if (source->task_events(NULL, 0) > 0) return 0;
    return lo_agent_output_count() == 0 && !lo_agent_rules_found();
}

// The program the exec that ends this recording goes on as (lo_agent_set_exec_target).
static char g_exec_target[PATH_MAX];

void lo_agent_set_exec_target(const char *path) {
    size_t length = path ? strnlen(path, sizeof g_exec_target - 1) : 0;
    if (length) memcpy(g_exec_target, path, length);
    g_exec_target[length] = 0;
}

static void write_recording(const lo_sampler_source *source, pid_t pid, int stopped, int from_loader, uint32_t flags,
                            uint64_t end) {
    static writer w;
    w.fd = open(lo_agent.temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    w.failed = 0;
    w.used = 0;
    if (w.fd < 0) return;

    lo_counts counts = source->counts();
    uint32_t rate = source->rate_hz() ? source->rate_hz() : lo_agent.rate_hz;
    uint64_t header[] = {
        LO_AGENT_MAGIC, LO_AGENT_FORMAT, (uint64_t)pid, (uint64_t)lo_agent.parent, lo_agent.image,
        flags | atomic_load(&program_flags), lo_agent.process_start_ns, lo_agent.premain_ns, lo_agent.main_entry_ns, end,
        rate, counts.signals_sent, counts.captured, counts.dropped, counts.failed, counts.skipped,
        counts.truncated, counts.waiting, counts.unanswered, counts.threads_seen, source->chained_signals(),
    };
    put(&w, header, sizeof header);

    /* The command line, NUL-separated, as /proc keeps it. */
    static char command[8192];
    if (lo_agent.command_length > 0 && pid == lo_agent.pid) put_string(&w, lo_agent.command, lo_agent.command_length);
    else put_string(&w, command, lo_read_proc_file("/proc/self/cmdline", command, sizeof command));

    if (stopped) put_thread_names_stopped(&w, source);
    else put_thread_names_now(&w);
    put_objects(&w, from_loader);

    /* The samples. */
    size_t words = 0;
    const uint64_t *store = source->store(&words);
    put_word(&w, store ? words : 0);
    if (store && words) put(&w, store, words * sizeof(uint64_t));

    /* The Swift tasks' events, five words each: kind, how it was created and thread; task;
       creator; time; end. */
    size_t events = source->task_events(NULL, 0);
    put_word(&w, events);
    static lo_task_event batch[256];
    size_t start = 0;
    while (start < events) {
        size_t copied = source->task_events_from(start, batch, sizeof batch / sizeof batch[0]);
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

    /* The process's counters before `main` and now: eight words each (lo_process_counters). */
    lo_process_counters now;
    lo_read_process_counters(&now);
    put_word(&w, 2 * sizeof(lo_process_counters) / sizeof(uint64_t));
    put(&w, &lo_agent.premain_counters, sizeof(lo_process_counters));
    put(&w, &now, sizeof now);

    /* The loader's timeline, from the audit library. */
    const char *loader = lo_agent_loader_records.text;
    uint64_t loader_length = loader ? lo_agent_loader_records.length : 0;
    put_string(&w, loader ? loader : "", (size_t)loader_length);

    /* The thread rules' findings (`liftoff profile --rules`), as lines (rules.c). */
    static char violations[LO_RULES_SITES_TEXT];
    put_string(&w, violations, lo_agent_violations_text(violations, sizeof violations));

    /* What it wrote to standard output and error, and which thread wrote it (output.c). */
    const lo_output_copy *writes = NULL;
    size_t write_count = lo_agent_output_snapshot(&writes);
    put_word(&w, write_count);
    for (size_t index = 0; index < write_count; index++) {
        put_word(&w, writes[index].time_ns);
        put_word(&w, (uint64_t)writes[index].tid | (uint64_t)writes[index].fd << 32);
        put_string(&w, writes[index].text, writes[index].length);
    }
    /* The program an exec goes on as, when this recording ends with one. */
    put_string(&w, g_exec_target, (flags & LO_AGENT_ENDED_BY_EXEC) ? strlen(g_exec_target) : 0);

    /* No fsync: `liftoff` reads the file right away, and the rename keeps it whole. */
    flush(&w);
    int failed = w.failed;
    if (close(w.fd) != 0) failed = 1;
    if (failed || rename(lo_agent.temporary, lo_agent.path) != 0) unlink(lo_agent.temporary);
}

int lo_agent_claim_write(void) {
    if (!lo_agent_records()) return 0;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&written, &expected, 1)) return 0;
    atomic_store(&write_done, 0);
    // The agent's own writes are no finding.
    lo_agent_rules_end();
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
    if (!lo_agent_claim_write()) return;
    uint64_t end = lo_monotonic_ns();
    sigset_t mask;
    lo_agent_block_exit_signals(&mask);
    lo_sampler_quiesce();
    write_recording(lo_sampler_this_source(), lo_agent.pid, 1, 1, flags, end);
    atomic_store(&write_done, 1);
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

void lo_agent_write_halted(uint32_t flags) {
    if (!lo_agent_claim_write()) return;
    uint64_t end = lo_monotonic_ns();
    lo_sampler_halt();
    write_recording(lo_sampler_this_source(), lo_agent.pid, 0, 0, flags, end);
    atomic_store(&write_done, 1);
}

void lo_agent_write(void) { lo_agent_write_stopped(0); }

/* ---- a program that records itself ---- */

// The sampler of a program that links Liftoff, after the agent stood down for it, and the process
// it records: written by the agent only when the program ends before it wrote its own profile.
static const lo_sampler_source *program_source;
static pid_t program_pid;
static atomic_int program_written;

void lo_agent_hand_over(const lo_sampler_source *program) {
    if (program == NULL || program->size < sizeof(lo_sampler_source)) return;
    program_source = program;
    program_pid = lo_agent.pid;
    atomic_store(&program_written, 0);
}

void lo_agent_write_loader_records(void) {
    const char *text = lo_agent_loader_records.text;
    size_t length = text ? (size_t)lo_agent_loader_records.length : 0;
    char path[PATH_MAX];
    if (length == 0 || lo_agent.directory[0] == 0 || !program_file_path(path, ".loader")) return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    // Cut short (a full disk), the file still parses: liftoff skips a line that is not whole.
    write_all(fd, text, length);
    close(fd);
}

int lo_agent_program_records(void) {
    return program_source != NULL && program_pid != 0 && (pid_t)syscall(SYS_getpid) == program_pid &&
           !atomic_load(&program_written);
}

void lo_agent_write_program(uint32_t flags) {
    if (!lo_agent_program_records()) return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&program_written, &expected, 1)) return;
    uint64_t end = lo_monotonic_ns();
    int sampling = program_source->is_running();
    if (sampling) program_source->halt();
    // Nothing kept: the program wrote its profile (which frees the store), or never sampled.
    size_t words = 0;
    program_source->store(&words);
    if (words == 0) return;
    write_recording(program_source, program_pid, !sampling, 0, flags | LO_AGENT_RECORDED_BY_PROGRAM, end);
}

int lo_agent_start_sampling(void) {
    // In a child, the first tick a period after the start: the program goes on at once, and one
    // that ends within the period (most of a shell's children and the programs they exec) costs
    // the sampler thread's creation and no more. The launch itself starts once the sampler thread
    // runs: on a busy machine it can wait long for a core, and a program that ran meanwhile would
    // be seen only from its first tick. The start and the wait are in no sample.
    int root = lo_agent.is_root;
    lo_config config = {lo_agent.rate_hz, 256, LO_SAMPLE_ALL_THREADS | (root ? 0 : LO_DEFER_FIRST_TICK)};
    lo_sampler_leave_out_calling_thread(1);
    int started = lo_sampler_start(&config) == LO_OK;
    if (started) {
        lo_sampler_register_current_thread();
        if (root) lo_sampler_await_running(1000000000ull);
    }
    lo_sampler_leave_out_calling_thread(0);
    return started;
}

int lo_agent_begin(void) {
    if (!lo_agent_set_paths() || !lo_agent_start_sampling()) {
        lo_agent.pid = 0;
        return 0;
    }
    atomic_store(&written, 0);
    lo_agent_rules_begin();
    return 1;
}

void lo_agent_resume(void) {
    if (!lo_agent_records() || atomic_load(&written) == 0) return;
    lo_agent.image++;
    lo_agent.premain_ns = lo_agent.main_entry_ns = lo_monotonic_ns();
    lo_agent_begin();
}

void lo_agent_set_program_flag(uint32_t flag, int on) {
    if (on) {
        atomic_fetch_or(&program_flags, flag);
    } else {
        atomic_fetch_and(&program_flags, ~flag);
    }
}

const int lo_agent_exit_signals[LO_AGENT_EXIT_SIGNAL_COUNT] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};

void lo_agent_block_exit_signals(sigset_t *previous_mask) {
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < LO_AGENT_EXIT_SIGNAL_COUNT; i++) sigaddset(&set, lo_agent_exit_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, previous_mask);
}

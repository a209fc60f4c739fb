// The loader's timeline through the audit interface (see lo_audit.h for the file it writes).
//
// The audit interface stamps each object's search and mapping and the moment all are relocated,
// but has no callback around an object's initializers. So when an object is mapped, before the
// loader relocates it, its DT_INIT_ARRAY entry in the dynamic section (still writable then) is
// pointed at an array of trampolines of this library's: each stamps an initializer's start and end
// around a call to the original entry, read when it runs (relocated by then). Nothing is written
// once relocation has made pages read-only, so no page's protection changes. Objects whose
// dynamic section is not writable, and arrays beyond the trampolines, keep their entries: their
// initializers run untimed.
//
// The library needs no other object, not even the loader: the loader's own variable
// __libc_stack_end (where the environment and the auxiliary vector lie) is looked up in the
// loader's symbol table when the loader reports itself, right after the program, and only then
// does the library know whether it records. A library it needed would be searched for along its
// RUNPATH, in as many directories, every launch.

#include "lo_audit.h"
#include "system.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>

#define LO_MAX_OBJECTS 512
#define LO_TRAMPOLINES 1024
#define LO_BUFFER_BYTES (256 * 1024)

typedef void (*lo_init_function)(int, char **, char **);

typedef struct {
    struct link_map *map;
    uint64_t search_ns;
    uint64_t mapped_ns;
} lo_object;

static int g_active;
static char g_directory[4096];
static unsigned long long g_pid, g_image;
static uint64_t g_start_ns, g_relocated_ns;
static int g_relocated, g_written;
static lo_object g_objects[LO_MAX_OBJECTS];
static int g_object_count;
// The name searched for last, and when the search began: the next object mapped is its result.
static uint64_t g_search_ns;

// Slot by slot: the object it belongs to, and the loader's array the trampolines stand for.
static int g_owner[LO_TRAMPOLINES];
static int g_first_slot[LO_MAX_OBJECTS];
static const lo_init_function *g_original_array[LO_MAX_OBJECTS];
static lo_init_function g_entries[LO_TRAMPOLINES];
static int g_trampoline_count;

static char g_buffer[LO_BUFFER_BYTES];
static size_t g_length;
static int g_truncated;

static uint64_t lo_now(void) { return lo_clock_ns(CLOCK_MONOTONIC); }

// The process's first stack as the kernel laid it out, which the loader records in its variable
// __libc_stack_end before it loads any audit library: argc, the arguments, the environment and
// the auxiliary vector. Read there, they cost no file of /proc (the first a process opens costs it
// tens of microseconds).
static long *g_stack_end;

// The environment's entries, ended by a null pointer.
static char **lo_environment(void) {
    long *stack = g_stack_end;
    if (stack == NULL || stack[0] < 0) return NULL;
    return (char **)(stack + 1) + stack[0] + 1;
}

// The auxiliary vector's entry `type` (0 when absent).
static uint64_t lo_auxv(uint64_t type) {
    char **entry = lo_environment();
    if (entry == NULL) return 0;
    while (*entry) entry++;
    for (const uint64_t *pair = (const uint64_t *)(entry + 1); pair[0] != AT_NULL; pair += 2) {
        if (pair[0] == type) return pair[1];
    }
    return 0;
}

// ---- the record buffer -------------------------------------------------------------------

// The agent's recording.c has the same formatter: the audit library links nothing, not even the
// agent, so it keeps its own copy.
static size_t lo_format_u64(char *out, uint64_t value) {
    char digits[21];
    size_t count = 0;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    for (size_t i = 0; i < count; i++) out[i] = digits[count - 1 - i];
    return count;
}

// The longest line: a kind letter, ten numbers and a path, each after a tab, and the line's end.
#define LO_LINE_MAX (2 + 10 * 21 + 4096 + 2)

// One line: a kind letter, then numbers, then (when not NULL) a path, tab-separated, written in
// place at the buffer's end. When it might not fit, the buffer ends with "T" instead.
static void lo_line(char kind, const uint64_t *values, int count, const char *path) {
    if (g_truncated) return;
    if (sizeof g_buffer - g_length < LO_LINE_MAX + 4) {
        g_truncated = 1;
        g_buffer[g_length++] = 'T';
        g_buffer[g_length++] = '\n';
        return;
    }
    char *line = g_buffer + g_length;
    size_t length = 0;
    line[length++] = kind;
    for (int i = 0; i < count && i < 10; i++) {
        line[length++] = '\t';
        length += lo_format_u64(line + length, values[i]);
    }
    if (path) {
        line[length++] = '\t';
        size_t start = length;
        for (const char *at = path; *at && length - start < 4096; at++) {
            line[length++] = (*at == '\t' || *at == '\n' || *at == '\r') ? '?' : *at;
        }
    }
    line[length++] = '\n';
    g_length += length;
}

// ---- objects ------------------------------------------------------------------------------

// The object's program headers: from its ELF header at its base (a shared object or a PIE), or
// from the auxiliary vector (the executable).
static const ElfW(Phdr) *lo_program_headers(const struct link_map *map, int index, int *count) {
    if (map->l_addr == 0) {
        // A position-dependent executable: its headers are where the kernel said.
        if (index != 0) return NULL;
        *count = (int)lo_auxv(AT_PHNUM);
        return (const ElfW(Phdr) *)lo_auxv(AT_PHDR);
    }
    const ElfW(Ehdr) *header = (const ElfW(Ehdr) *)map->l_addr;
    if (header->e_ident[EI_MAG0] != ELFMAG0 || header->e_ident[EI_MAG1] != ELFMAG1 || header->e_ident[EI_MAG2] != ELFMAG2 ||
        header->e_ident[EI_MAG3] != ELFMAG3 || header->e_phentsize != sizeof(ElfW(Phdr))) {
        return NULL;
    }
    *count = header->e_phnum;
    return (const ElfW(Phdr) *)(map->l_addr + header->e_phoff);
}

static uint64_t lo_object_size(const ElfW(Phdr) *headers, int count) {
    uint64_t low = UINT64_MAX, high = 0;
    for (int i = 0; headers && i < count; i++) {
        if (headers[i].p_type != PT_LOAD) continue;
        if (headers[i].p_vaddr < low) low = headers[i].p_vaddr;
        if (headers[i].p_vaddr + headers[i].p_memsz > high) high = headers[i].p_vaddr + headers[i].p_memsz;
    }
    return high > low ? high - low : 0;
}

// Relocation counts from the dynamic section: relative ones (DT_RELACOUNT/DT_RELCOUNT, and
// DT_RELR's, unpacked), all of them, and the PLT's (DT_JMPREL, counted once where its table lies
// inside DT_RELA's, as some linkers lay them out).
static void lo_relocations(const struct link_map *map, uint64_t counts[3]) {
    uint64_t rela = 0, rela_size = 0, rela_entry = sizeof(ElfW(Rela)), rel = 0, rel_size = 0, rel_entry = sizeof(ElfW(Rel));
    uint64_t jmprel = 0, plt_size = 0, plt_kind = DT_RELA, relative = 0, relr = 0, relr_table = 0, relr_size = 0;
    for (const ElfW(Dyn) *entry = map->l_ld; entry && entry->d_tag != DT_NULL; entry++) {
        switch (entry->d_tag) {
        case DT_RELA: rela = entry->d_un.d_ptr; break;
        case DT_RELASZ: rela_size = entry->d_un.d_val; break;
        case DT_RELAENT: rela_entry = entry->d_un.d_val ? entry->d_un.d_val : rela_entry; break;
        case DT_REL: rel = entry->d_un.d_ptr; break;
        case DT_RELSZ: rel_size = entry->d_un.d_val; break;
        case DT_RELENT: rel_entry = entry->d_un.d_val ? entry->d_un.d_val : rel_entry; break;
        case DT_JMPREL: jmprel = entry->d_un.d_ptr; break;
        case DT_PLTRELSZ: plt_size = entry->d_un.d_val; break;
        case DT_PLTREL: plt_kind = entry->d_un.d_val; break;
        case DT_RELACOUNT: case DT_RELCOUNT: relative += entry->d_un.d_val; break;
#ifdef DT_RELR
        case DT_RELR: relr_table = entry->d_un.d_ptr; break;
        case DT_RELRSZ: relr_size = entry->d_un.d_val; break;
#endif
        default: break;
        }
    }
    if (relr_table != 0 && relr_size > 0) {
        // DT_RELR packs relative relocations: an address word, then bitmap words (lowest bit set)
        // of 63 more each. The loader may have made the table's address absolute already.
        if (relr_table < map->l_addr) relr_table += map->l_addr;
        const ElfW(Addr) *words = (const ElfW(Addr) *)relr_table;
        for (size_t i = 0; i < relr_size / sizeof(ElfW(Addr)); i++) {
            relr += (words[i] & 1) ? (uint64_t)__builtin_popcountll((unsigned long long)(words[i] >> 1)) : 1;
        }
    }
    uint64_t plt_entry = plt_kind == DT_REL ? rel_entry : rela_entry;
    uint64_t plt = plt_size / plt_entry;
    uint64_t table = plt_kind == DT_REL ? rel : rela, table_size = plt_kind == DT_REL ? rel_size : rela_size;
    int plt_inside = jmprel >= table && jmprel + plt_size <= table + table_size && table_size > 0;
    counts[0] = relative + relr;
    counts[1] = rela_size / rela_entry + rel_size / rel_entry + relr + (plt_inside ? 0 : plt);
    counts[2] = plt;
}

// ---- initializers -------------------------------------------------------------------------

// The thread's CPU time, major faults and blocks read from storage (512 bytes each): no sampling
// signal is pending before main, so the fault count is whole.
static void lo_thread_usage(uint64_t usage[3]) {
    usage[0] = lo_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    lo_thread_counts(&usage[1], &usage[2]);
}

static uint64_t lo_difference(uint64_t after, uint64_t before) { return after > before ? after - before : 0; }

// Most initializers take a microsecond or less (a Swift program runs about 70, 7 of them over
// 20 µs): reading the thread's usage around each would cost a process two system calls an
// initializer. It is read before the first and after each that took at least LO_READ_AFTER_NS;
// one that took less is taken to have run on a CPU throughout and read nothing (a read from
// storage takes longer), and what it used is left out of the next reading's share.
#define LO_READ_AFTER_NS 20000
static uint64_t g_last_usage[3];
static int g_usage_read;
// The time initializers took since the last reading, which it does not cover.
static uint64_t g_unread_ns;

static void lo_initializer_ran(int slot, int argc, char **argv, char **envp) {
    int owner = g_owner[slot];
    lo_init_function function = g_original_array[owner][slot - g_first_slot[owner]];
    // The loader would call these too, and fail: nothing is run in their place.
    if (function == NULL || function == (lo_init_function)(intptr_t)-1) return;
    if (!g_usage_read) {
        lo_thread_usage(g_last_usage);
        g_usage_read = 1;
    }
    uint64_t start = lo_now();
    function(argc, argv, envp);
    uint64_t end = lo_now();
    uint64_t took = end - start, cpu = took, faults = 0, bytes = 0;
    if (took >= LO_READ_AFTER_NS) {
        uint64_t now[3];
        lo_thread_usage(now);
        // The reading also covers the short initializers since the last one, and the loader's
        // steps between them: no more CPU than the initializer's own time.
        uint64_t used = lo_difference(lo_difference(now[0], g_last_usage[0]), g_unread_ns);
        cpu = used < took ? used : took;
        faults = lo_difference(now[1], g_last_usage[1]);
        bytes = lo_difference(now[2], g_last_usage[2]) * 512;
        for (int i = 0; i < 3; i++) g_last_usage[i] = now[i];
        g_unread_ns = 0;
    } else {
        g_unread_ns += took;
    }
    uint64_t offset = (uintptr_t)function - (uintptr_t)g_objects[owner].map->l_addr;
    uint64_t values[7] = {(uint64_t)owner, offset, start, end, cpu, faults, bytes};
    lo_line('I', values, 7, NULL);
}

// LO_TRAMPOLINES functions, each passing its own slot: named and numbered by base-4 digits.
#define LO_T1(a, b, c, d, e) \
    static void lo_trampoline_##a##b##c##d##e(int argc, char **argv, char **envp) { \
        lo_initializer_ran(a * 256 + b * 64 + c * 16 + d * 4 + e, argc, argv, envp); \
    }
#define LO_T4(a, b, c, d) LO_T1(a, b, c, d, 0) LO_T1(a, b, c, d, 1) LO_T1(a, b, c, d, 2) LO_T1(a, b, c, d, 3)
#define LO_T16(a, b, c) LO_T4(a, b, c, 0) LO_T4(a, b, c, 1) LO_T4(a, b, c, 2) LO_T4(a, b, c, 3)
#define LO_T64(a, b) LO_T16(a, b, 0) LO_T16(a, b, 1) LO_T16(a, b, 2) LO_T16(a, b, 3)
#define LO_T256(a) LO_T64(a, 0) LO_T64(a, 1) LO_T64(a, 2) LO_T64(a, 3)
LO_T256(0) LO_T256(1) LO_T256(2) LO_T256(3)
#define LO_A1(a, b, c, d, e) lo_trampoline_##a##b##c##d##e,
#define LO_A4(a, b, c, d) LO_A1(a, b, c, d, 0) LO_A1(a, b, c, d, 1) LO_A1(a, b, c, d, 2) LO_A1(a, b, c, d, 3)
#define LO_A16(a, b, c) LO_A4(a, b, c, 0) LO_A4(a, b, c, 1) LO_A4(a, b, c, 2) LO_A4(a, b, c, 3)
#define LO_A64(a, b) LO_A16(a, b, 0) LO_A16(a, b, 1) LO_A16(a, b, 2) LO_A16(a, b, 3)
#define LO_A256(a) LO_A64(a, 0) LO_A64(a, 1) LO_A64(a, 2) LO_A64(a, 3)
static const lo_init_function g_trampolines[LO_TRAMPOLINES] = {LO_A256(0) LO_A256(1) LO_A256(2) LO_A256(3)};

// Whether [address, address + length) lies in a writable PT_LOAD of the object: before the loader
// relocates the object, such pages are still writable, PT_GNU_RELRO's included.
static int lo_writable(const ElfW(Phdr) *headers, int count, ElfW(Addr) base, uintptr_t address, size_t length) {
    for (int i = 0; i < count; i++) {
        uintptr_t start = base + headers[i].p_vaddr, end = start + headers[i].p_memsz;
        if (headers[i].p_type == PT_LOAD && address >= start && address + length <= end) return (headers[i].p_flags & PF_W) != 0;
    }
    return 0;
}

// Points the object's DT_INIT_ARRAY at trampolines, before the loader relocates it.
static void lo_wrap_initializers(int index, const ElfW(Phdr) *headers, int header_count) {
    struct link_map *map = g_objects[index].map;
    ElfW(Dyn) *array = NULL;
    size_t size = 0;
    for (ElfW(Dyn) *entry = map->l_ld; entry && entry->d_tag != DT_NULL; entry++) {
        if (entry->d_tag == DT_INIT_ARRAY) array = entry;
        if (entry->d_tag == DT_INIT_ARRAYSZ) size = entry->d_un.d_val;
    }
    size_t count = size / sizeof(lo_init_function);
    if (array == NULL || count == 0 || count > (size_t)(LO_TRAMPOLINES - g_trampoline_count) || headers == NULL) return;
    ElfW(Addr) base = map->l_addr;
    if (!lo_writable(headers, header_count, base, (uintptr_t)array, sizeof *array)) return;
    int first = g_trampoline_count;
    g_trampoline_count += (int)count;
    g_first_slot[index] = first;
    // The loader reads DT_INIT_ARRAY as an offset from the base, when it runs the initializers:
    // the entries there are relocated by then.
    g_original_array[index] = (const lo_init_function *)(base + array->d_un.d_ptr);
    for (size_t i = 0; i < count; i++) {
        g_owner[first + (int)i] = index;
        g_entries[first + (int)i] = g_trampolines[first + (int)i];
    }
    array->d_un.d_ptr = (uintptr_t)&g_entries[first] - base;
}

// ---- the hand-over -------------------------------------------------------------------------

// Where the agent takes the records (lo_agent.h's lo_agent_loader_records): its recording then
// carries them, and no file of their own is written (creating one cost a process 0.1 ms).
typedef struct {
    const char *volatile text;
    volatile uint64_t length;
} lo_handover;
static lo_handover *g_handover;

static int lo_same(const char *left, const char *right) {
    while (*left && *left == *right) left++, right++;
    return *left == *right;
}

// The address of the symbol `name` an object defines, from its dynamic symbol table (through
// DT_GNU_HASH or DT_HASH); 0 when it has none.
static uintptr_t lo_find_symbol(const struct link_map *map, const char *name) {
    const ElfW(Sym) *symbols = NULL;
    const char *strings = NULL;
    const uint32_t *gnu = NULL, *hash = NULL;
    for (const ElfW(Dyn) *entry = map->l_ld; entry && entry->d_tag != DT_NULL; entry++) {
        uintptr_t address = entry->d_un.d_ptr < map->l_addr ? map->l_addr + entry->d_un.d_ptr : entry->d_un.d_ptr;
        if (entry->d_tag == DT_SYMTAB) symbols = (const ElfW(Sym) *)address;
        if (entry->d_tag == DT_STRTAB) strings = (const char *)address;
        if (entry->d_tag == DT_GNU_HASH) gnu = (const uint32_t *)address;
        if (entry->d_tag == DT_HASH) hash = (const uint32_t *)address;
    }
    if (!symbols || !strings) return 0;
    if (gnu) {
        uint32_t h = 5381;
        for (const char *at = name; *at; at++) h = h * 33 + (uint8_t)*at;
        uint32_t buckets = gnu[0], offset = gnu[1], bloom_words = gnu[2];
        if (buckets == 0) return 0;
        const uint32_t *bucket = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_words);
        const uint32_t *chain = bucket + buckets;
        uint32_t index = bucket[h % buckets];
        if (index < offset) return 0;
        for (;; index++) {
            uint32_t other = chain[index - offset];
            if ((other | 1) == (h | 1) && symbols[index].st_shndx != SHN_UNDEF && lo_same(strings + symbols[index].st_name, name)) {
                return map->l_addr + symbols[index].st_value;
            }
            if (other & 1) return 0;
        }
    }
    for (uint32_t i = 0; hash && i < hash[1]; i++) {
        if (symbols[i].st_shndx != SHN_UNDEF && lo_same(strings + symbols[i].st_name, name)) return map->l_addr + symbols[i].st_value;
    }
    return 0;
}

// ---- the file -----------------------------------------------------------------------------

static void lo_write_file(void) {
    if (g_written) return;
    g_written = 1;
    char path[4096 + 64];
    size_t length = lo_strlen(g_directory);
    memcpy(path, g_directory, length);
    path[length++] = '/';
    length += lo_format_u64(path + length, g_pid);
    path[length++] = '-';
    length += lo_format_u64(path + length, g_image);
    memcpy(path + length, LO_AUDIT_SUFFIX, sizeof LO_AUDIT_SUFFIX);
    int fd = lo_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return;
    for (size_t done = 0; done < g_length;) {
        long wrote = lo_write(fd, g_buffer + done, g_length - done);
        if (wrote <= 0) break;
        done += (size_t)wrote;
    }
    lo_close(fd);
}

// ---- the audit interface ------------------------------------------------------------------

static int lo_ends_with(const char *text, const char *end) {
    size_t length = lo_strlen(text), end_length = lo_strlen(end);
    return length >= end_length && lo_same(text + length - end_length, end);
}

// The decimal number at `*text`, moved past; UINT64_MAX when there is none or it overflows.
static uint64_t lo_number(const char **text) {
    const char *at = *text;
    uint64_t value = 0;
    if (*at < '0' || *at > '9') return UINT64_MAX;
    for (; *at >= '0' && *at <= '9'; at++) {
        if (value > UINT64_MAX / 10 - 1) return UINT64_MAX;
        value = value * 10 + (uint64_t)(*at - '0');
    }
    *text = at;
    return value;
}

// LIFTOFF_AGENT_IMAGE=PID:START:IMAGE (as the agent reads it): the image number of this program.
static unsigned long long lo_image(const char *text, unsigned long long pid) {
    if (!text) return 0;
    uint64_t from = lo_number(&text);
    if (from != pid || *text++ != ':' || lo_number(&text) == UINT64_MAX || *text++ != ':') return 0;
    uint64_t image = lo_number(&text);
    return *text == 0 && image < UINT32_MAX ? image : 0;
}

// The value of the environment variable `name`: the library has no C library to ask.
static const char *lo_getenv(const char *name) {
    char **entry = lo_environment();
    size_t name_length = lo_strlen(name);
    for (; entry != NULL && *entry != NULL; entry++) {
        const char *text = *entry;
        size_t i = 0;
        while (i < name_length && text[i] == name[i]) i++;
        if (i == name_length && text[i] == '=') return text + i + 1;
    }
    return NULL;
}

// The vDSO's clock, found from the auxiliary vector: every stamp after this costs no system call.
static void lo_find_vdso(void) {
    const ElfW(Ehdr) *header = (const ElfW(Ehdr) *)lo_auxv(AT_SYSINFO_EHDR);
    if (header == NULL || header->e_phentsize != sizeof(ElfW(Phdr))) return;
    const ElfW(Phdr) *headers = (const ElfW(Phdr) *)((uintptr_t)header + header->e_phoff);
    uintptr_t bias = (uintptr_t)header;
    const void *dynamic = NULL;
    for (int i = 0; i < header->e_phnum; i++) {
        if (headers[i].p_type == PT_LOAD && headers[i].p_offset == 0) bias = (uintptr_t)header - headers[i].p_vaddr;
    }
    for (int i = 0; i < header->e_phnum; i++) {
        if (headers[i].p_type == PT_DYNAMIC) dynamic = (const void *)(bias + headers[i].p_vaddr);
    }
    if (dynamic) lo_use_vdso(bias, dynamic);
}

// The loader's first moment this library sees, and the objects reported before the loader
// itself: the program (the library cannot tell yet whether it records).
static uint64_t g_version_ns;
static struct link_map *g_early_maps[4];
static uint64_t g_early_ns[4];
static int g_early_count, g_decided;

static void lo_object_opened(struct link_map *map, uint64_t now, int is_loader) {
    if (g_object_count >= LO_MAX_OBJECTS) return;
    if (map->l_name && lo_ends_with(map->l_name, "/libLiftoffAgent.so")) {
        g_handover = (lo_handover *)lo_find_symbol(map, "lo_agent_loader_records");
    }
    int index = g_object_count++;
    g_objects[index] = (lo_object){.map = map, .search_ns = g_search_ns, .mapped_ns = now};
    g_search_ns = 0;
    int header_count = 0;
    const ElfW(Phdr) *headers = lo_program_headers(map, index, &header_count);
    uint64_t relocations[3];
    lo_relocations(map, relocations);
    const char *path = map->l_name;
    char executable[4096];
    if (index == 0 && (!path || !*path)) {
        long length = lo_readlink("/proc/self/exe", executable, sizeof executable - 1);
        executable[length > 0 ? length : 0] = 0;
        path = executable;
    }
    uint64_t values[8] = {
        (uint64_t)index, g_objects[index].search_ns, now, (uint64_t)map->l_addr, lo_object_size(headers, header_count),
        relocations[0], relocations[1], relocations[2],
    };
    lo_line('O', values, 8, path ? path : "");
    // The loader relocated itself long before: its pages are read-only already.
    if (!is_loader) lo_wrap_initializers(index, headers, header_count);
}

// Once the loader reported itself: whether this process records (LIFTOFF_AGENT_OUT), and then
// the records of the objects reported so far.
static void lo_decide(const struct link_map *loader) {
    g_decided = 1;
    uintptr_t end = lo_find_symbol(loader, "__libc_stack_end");
    if (end == 0 || *(long **)end == NULL) return;
    g_stack_end = *(long **)end;
    const char *out = lo_getenv("LIFTOFF_AGENT_OUT");
    size_t length = out ? lo_strlen(out) : 0;
    if (length == 0 || length >= sizeof g_directory) return;
    for (size_t i = 0; i <= length; i++) g_directory[i] = out[i];
    lo_find_vdso();
    g_pid = (unsigned long long)lo_getpid();
    g_image = lo_image(lo_getenv("LIFTOFF_AGENT_IMAGE"), g_pid);
    g_start_ns = g_version_ns;
    g_active = 1;
    uint64_t values[1] = {g_version_ns};
    lo_line('L', values, 1, NULL);
}

unsigned int la_version(unsigned int version) {
    g_version_ns = lo_now();
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag) {
    (void)cookie;
    if (g_active && !g_relocated && flag == LA_SER_ORIG) g_search_ns = lo_now();
    return (char *)name;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
    (void)cookie;
    if (g_relocated || lmid != LM_ID_BASE) return 0;
    uint64_t now = lo_now();
    if (!g_decided) {
        // The program comes first, then the loader, the one object that defines __libc_stack_end.
        int is_loader = g_early_count > 0 && lo_find_symbol(map, "__libc_stack_end") != 0;
        if (g_early_count < 4) {
            g_early_maps[g_early_count] = map;
            g_early_ns[g_early_count++] = now;
        }
        if (!is_loader && g_early_count < 4) return 0;
        lo_decide(map);
        for (int i = 0; g_active && i < g_early_count; i++) lo_object_opened(g_early_maps[i], g_early_ns[i], g_early_maps[i] == map);
        return 0;
    }
    if (g_active) lo_object_opened(map, now, 0);
    return 0;
}

void la_activity(uintptr_t *cookie, unsigned int flag) {
    (void)cookie;
    if (!g_active || g_relocated || flag != LA_ACT_CONSISTENT || g_object_count == 0) return;
    g_relocated = 1;
    g_relocated_ns = lo_now();
    uint64_t values[1] = {g_relocated_ns};
    lo_line('R', values, 1, NULL);
}

void la_preinit(uintptr_t *cookie) {
    (void)cookie;
    if (!g_active) return;
    uint64_t values[1] = {lo_now()};
    lo_line('P', values, 1, NULL);
    if (g_handover) {
        g_handover->length = g_length;
        g_handover->text = g_buffer;
    } else {
        lo_write_file();
    }
}

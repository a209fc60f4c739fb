// The audit library's system layer (see system.h): Linux system calls on x86-64 and AArch64.

#include "system.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>

long lo_syscall(long number, long a, long b, long c, long d) {
#if defined(__x86_64__)
    long result;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return result;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = number;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
#else
#error "the audit library makes its own system calls on x86-64 and AArch64 only"
#endif
}

typedef int (*lo_clock_gettime)(int, struct timespec *);
static lo_clock_gettime g_vdso_clock;

uint64_t lo_clock_ns(int clock) {
    struct timespec now = {0, 0};
    if (g_vdso_clock) {
        if (g_vdso_clock(clock, &now) != 0) return 0;
    } else if (lo_syscall(SYS_clock_gettime, clock, (long)&now, 0, 0) != 0) {
        return 0;
    }
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static int lo_equal(const char *left, const char *right) {
    while (*left && *left == *right) left++, right++;
    return *left == *right;
}

void lo_use_vdso(uintptr_t base, const void *dynamic) {
    const ElfW(Sym) *symbols = 0;
    const char *strings = 0;
    const uint32_t *hash = 0;
    for (const ElfW(Dyn) *entry = dynamic; entry && entry->d_tag != DT_NULL; entry++) {
        // The vDSO's dynamic section is read-only: its addresses are still relative to its base.
        uintptr_t address = entry->d_un.d_ptr < base ? base + entry->d_un.d_ptr : entry->d_un.d_ptr;
        if (entry->d_tag == DT_SYMTAB) symbols = (const ElfW(Sym) *)address;
        if (entry->d_tag == DT_STRTAB) strings = (const char *)address;
        if (entry->d_tag == DT_HASH) hash = (const uint32_t *)address;
    }
    if (!symbols || !strings || !hash) return;
#if defined(__x86_64__)
    const char *wanted = "__vdso_clock_gettime";
#else
    const char *wanted = "__kernel_clock_gettime";
#endif
    for (uint32_t i = 0; i < hash[1]; i++) {
        if (ELF64_ST_TYPE(symbols[i].st_info) != STT_FUNC || symbols[i].st_shndx == SHN_UNDEF) continue;
        if (!lo_equal(strings + symbols[i].st_name, wanted)) continue;
        g_vdso_clock = (lo_clock_gettime)(base + symbols[i].st_value);
        return;
    }
}

int lo_open(const char *path, int flags, int mode) {
    long fd = lo_syscall(SYS_openat, AT_FDCWD, (long)path, flags, mode);
    return fd < 0 ? -1 : (int)fd;
}

long lo_read(int fd, void *buffer, size_t length) { return lo_syscall(SYS_read, fd, (long)buffer, (long)length, 0); }

long lo_write(int fd, const void *buffer, size_t length) { return lo_syscall(SYS_write, fd, (long)buffer, (long)length, 0); }

void lo_close(int fd) { lo_syscall(SYS_close, fd, 0, 0, 0); }

long lo_readlink(const char *path, char *buffer, size_t length) {
    return lo_syscall(SYS_readlinkat, AT_FDCWD, (long)path, (long)buffer, (long)length);
}

int lo_getpid(void) { return (int)lo_syscall(SYS_getpid, 0, 0, 0, 0); }

void lo_thread_counts(uint64_t *major_faults, uint64_t *blocks_read) {
    struct rusage usage;
    if (lo_syscall(SYS_getrusage, RUSAGE_THREAD, (long)&usage, 0, 0) != 0) {
        *major_faults = *blocks_read = 0;
        return;
    }
    *major_faults = (uint64_t)usage.ru_majflt;
    *blocks_read = (uint64_t)usage.ru_inblock;
}

size_t lo_strlen(const char *text) {
    size_t length = 0;
    while (text[length]) length++;
    return length;
}

// The compiler may call these for copies and clears: the library's own, not the C library's.
__attribute__((visibility("hidden"))) void *memcpy(void *to, const void *from, size_t length) {
    unsigned char *out = to;
    const unsigned char *in = from;
    for (; length >= sizeof(uint64_t); length -= sizeof(uint64_t), out += sizeof(uint64_t), in += sizeof(uint64_t)) {
        uint64_t word;
        __builtin_memcpy(&word, in, sizeof word);
        __builtin_memcpy(out, &word, sizeof word);
    }
    while (length--) *out++ = *in++;
    return to;
}

__attribute__((visibility("hidden"))) void *memset(void *to, int value, size_t length) {
    unsigned char *out = to;
    while (length--) *out++ = (unsigned char)value;
    return to;
}

// What the audit library needs of the system, without the C library: a library the loader audits
// gets a namespace of its own, and a C library loaded there costs every process about 0.25 ms
// (mapping, relocating and initializing a second copy). So the audit library makes its own
// system calls, reads the clock through the vDSO, and brings the few string functions it uses.
#ifndef LO_AUDIT_SYSTEM_H
#define LO_AUDIT_SYSTEM_H

#include <stddef.h>
#include <stdint.h>

long lo_syscall(long number, long a, long b, long c, long d);

// Nanoseconds of `clock` (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID), through the vDSO once
// lo_use_vdso found it, else by a system call; 0 when it cannot be read.
uint64_t lo_clock_ns(int clock);
// Finds __vdso_clock_gettime in the vDSO whose dynamic section is `dynamic`, mapped at `base`.
void lo_use_vdso(uintptr_t base, const void *dynamic);

int lo_open(const char *path, int flags, int mode);
long lo_read(int fd, void *buffer, size_t length);
long lo_write(int fd, const void *buffer, size_t length);
void lo_close(int fd);
long lo_readlink(const char *path, char *buffer, size_t length);
int lo_getpid(void);
// The calling thread's major page faults and blocks read (getrusage(RUSAGE_THREAD)).
void lo_thread_counts(uint64_t *major_faults, uint64_t *blocks_read);

size_t lo_strlen(const char *text);
void *memcpy(void *to, const void *from, size_t length);
void *memset(void *to, int value, size_t length);

#endif

// libunwind's address-check pipe, stood in for.
//
// libunwind checks an address it is unsure of by writing a byte from it to a pipe of its own
// (EFAULT: unreadable), and remakes the pipe wherever reading from it fails, closing the old
// numbers first. Made from a handler, that pipe took numbers among the program's: a program that
// closes a number and dup2s over it could have its file closed by libunwind. So the pipe libunwind
// asks for (its caller's address tells: unwind.c) is two numbers no descriptor can have
// (lo_internal.h); a read from the one finds it empty, a write of a byte from an address to the
// other copies the byte with process_vm_readv (a system call that opens nothing), and closing them
// does nothing (blocking.c). libunwind writes with syscall(SYS_write, ...) or write(); on x86_64
// both are stood in for. Elsewhere libunwind keeps its pipe.

#include "lo_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__x86_64__)

int lo_unwind_pipe_made(int fds[2], const void *caller) {
    if (fds == NULL || !lo_called_by_unwinder(caller)) return 0;
    fds[0] = LO_UNWIND_PIPE_READ;
    fds[1] = LO_UNWIND_PIPE_WRITE;
    return 1;
}

long lo_unwind_pipe_write(const void *address) {
    char byte;
    struct iovec local = {&byte, 1}, remote = {(void *)address, 1};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1) return 1;
    errno = EFAULT;
    return -1;
}

// syscall(2), with libunwind's write to the stand-in answered here; every other call goes on to
// the C library's by a jump, so no frame of Liftoff's stays below a call that waits (Dispatch's
// futex waits are syscall(2) calls).
__attribute__((visibility("hidden"), used)) long lo_unwind_pipe_syscall_write(long number, long fd, long address) {
    (void)number;
    (void)fd;
    return lo_unwind_pipe_write((const void *)address);
}

typedef long (*lo_syscall_t)(long, ...);
__attribute__((visibility("hidden"), used)) _Atomic(lo_syscall_t) lo_real_syscall_function;

// The calls made before the C library's syscall was looked up (another object's constructor).
__attribute__((visibility("hidden"), used)) long lo_syscall_first(long number, long a, long b, long c, long d, long e, long f) {
    lo_syscall_t real = atomic_load(&lo_real_syscall_function);
    if (real == NULL) {
        real = (lo_syscall_t)dlsym(RTLD_NEXT, "syscall");
        if (real == NULL) LO_FAIL("syscall not found in the C library");
        atomic_store(&lo_real_syscall_function, real);
    }
    return real(number, a, b, c, d, e, f);
}

// Looked up as the program loads, before any handler runs (dlsym is not safe in one).
__attribute__((constructor)) static void lo_unwind_pipe_resolve(void) {
    if (atomic_load(&lo_real_syscall_function) == NULL) {
        atomic_store(&lo_real_syscall_function, (lo_syscall_t)dlsym(RTLD_NEXT, "syscall"));
    }
}

#define LO_STRINGIFY_(value) #value
#define LO_STRINGIFY(value) LO_STRINGIFY_(value)

__asm__(".text\n"
        ".globl syscall\n"
        ".type syscall, @function\n"
        "syscall:\n"
        "    cmpq $1, %rdi\n" // SYS_write
        "    jne 1f\n"
        "    cmpl $" LO_STRINGIFY(LO_UNWIND_PIPE_WRITE) ", %esi\n"
        "    jne 1f\n"
        "    jmp lo_unwind_pipe_syscall_write\n"
        "1:  movq lo_real_syscall_function(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jz 2f\n"
        "    jmp *%rax\n"
        "2:  jmp lo_syscall_first\n"
        ".size syscall, .-syscall\n");

#else

int lo_unwind_pipe_made(int fds[2], const void *caller) {
    (void)fds;
    (void)caller;
    return 0;
}

long lo_unwind_pipe_write(const void *address) {
    (void)address;
    errno = EBADF;
    return -1;
}

#endif

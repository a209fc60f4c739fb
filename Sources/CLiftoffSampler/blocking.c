// Blocking calls caught where they are made: the C library's file, socket, name-lookup, sleep and
// wait functions.
//
// A program that links Liftoff defines these functions itself, so its own calls and those of the
// shared libraries it loads (Foundation, Dispatch, the Swift runtime) reach them first; each one
// calls the C library's function it stands for (dlsym RTLD_NEXT). While no rule is armed
// (lo_blocking_arm: a test collecting violations, a launch in progress) a call costs one atomic
// load more than the bare call. Armed, a call off the UI context costs a thread-local read and a
// compare more (and, once worker threads drain the main queue, a call into libdispatch asking
// which queue the thread runs); in the UI context -- the thread the rules treat as main, or any thread while it
// drains Dispatch's main queue (where the main actor runs) -- a call that may block is reported
// to the registered reporter, with the C library's function, what it reached and how long it
// waited, on the calling thread, before or after the real call.
//
// What may block, by the descriptor a call uses, told once per descriptor number and kept until
// Liftoff sees it closed or reused (close, fclose, dup, dup2, dup3, and each open, socket, pipe,
// socketpair, eventfd or accepted connection it makes): a regular file (on any file system but
// /proc and /sys: a file on tmpfs here may be on a disk on another machine) is the disk, an IPv4
// or IPv6 socket is the network; pipes, eventfds, terminals, devices, Unix sockets and standard
// input, output and error are not reported. A descriptor closed or made where Liftoff does not
// see it (inside the C library, or by memfd_create or timerfd_create) keeps its old kind until
// Liftoff sees it again. Sleeps are always reported; poll, select and epoll waits only with a
// finite, non-zero timeout (an event loop's idle wait has none); a name lookup always (it may
// ask a server).
//
// Sleeps, timed waits and mutexes are waits.c's; this file holds the checks' state and the file,
// socket and name-lookup functions.
//
// While the reporter runs on a thread (it captures a stack, symbolizes, may read files) that

#include "blocking.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>

#define LO_FD_KINDS 4096
#define LO_PROC_MAGIC 0x9fa0
#define LO_SYSFS_MAGIC 0x62656572

enum { LO_FD_UNKNOWN = 0, LO_FD_FILE = 1, LO_FD_NETWORK = 2, LO_FD_QUIET = 3 };

_Atomic pid_t lo_g_ui_tid;

// libdispatch's current queue and its main queue, looked up when the checks are first armed
// (Dispatch is loaded by then in a program that has it).
_Atomic(lo_current_queue_t) lo_g_current_queue;
void *_Atomic lo_g_main_queue;
static pthread_once_t g_dispatch_once = PTHREAD_ONCE_INIT;

static void lo_find_dispatch(void) {
    atomic_store(&lo_g_main_queue, dlsym(RTLD_DEFAULT, "_dispatch_main_q"));
    atomic_store(&lo_g_current_queue, (lo_current_queue_t)dlsym(RTLD_DEFAULT, "dispatch_get_current_queue"));
}

// Dispatch's main queue runs on the main thread unless the program called dispatch_main (as
// Swift's async `main` does): then a worker thread drains it, and only then is another thread
// asked which queue it runs (a call into libdispatch on every checked call).
_Atomic int lo_g_main_queue_on_workers;

typedef void (*lo_dispatch_main_t)(void);

// Weak, as the task recorder's wrappers: a static Swift runtime's own dispatch_main wins.
__attribute__((weak, noreturn)) void dispatch_main(void) {
    atomic_store(&lo_g_main_queue_on_workers, 1);
    lo_dispatch_main_t next = (lo_dispatch_main_t)dlsym(RTLD_NEXT, "dispatch_main");
    if (next != NULL) next();
    abort();
}

_Atomic int lo_g_blocking_armed;
static _Atomic(lo_blocking_reporter) g_reporter;
static _Atomic uint8_t g_fd_kind[LO_FD_KINDS];
__thread int lo_t_blocking_reporting __attribute__((tls_model("initial-exec")));
__thread int lo_t_blocking_exempt __attribute__((tls_model("initial-exec")));

void lo_blocking_exempt_begin(void) { lo_t_blocking_exempt++; }
void lo_blocking_exempt_end(void) {
    if (lo_t_blocking_exempt > 0) lo_t_blocking_exempt--;
}

void lo_blocking_arm(int delta) {
    if (delta > 0) pthread_once(&g_dispatch_once, lo_find_dispatch);
    atomic_fetch_add_explicit(&lo_g_blocking_armed, delta, memory_order_relaxed);
}
int lo_blocking_armed(void) { return atomic_load_explicit(&lo_g_blocking_armed, memory_order_relaxed) > 0; }
void lo_blocking_set_reporter(lo_blocking_reporter reporter) { atomic_store(&g_reporter, reporter); }
void lo_blocking_set_ui_thread(pid_t tid) { atomic_store_explicit(&lo_g_ui_tid, tid, memory_order_relaxed); }
int lo_blocking_main_queue_on_workers(void) { return atomic_load(&lo_g_main_queue_on_workers); }
void lo_blocking_set_main_queue_on_workers(int on) {
    pthread_once(&g_dispatch_once, lo_find_dispatch);
    atomic_store(&lo_g_main_queue_on_workers, on != 0);
}

void lo_report(int rule, const char *operation, uint64_t waited_ns, void *caller) {
    lo_blocking_reporter reporter = atomic_load(&g_reporter);
    if (reporter == NULL) return;
    int saved = errno;
    lo_t_blocking_reporting = 1;
    reporter(rule, operation, waited_ns, (uintptr_t)caller);
    lo_t_blocking_reporting = 0;
    errno = saved;
}

// ---- descriptors ----------------------------------------------------------------------------

static void lo_fd_forget(int fd) {
    if (fd >= 0 && fd < LO_FD_KINDS) atomic_store_explicit(&g_fd_kind[fd], LO_FD_UNKNOWN, memory_order_relaxed);
}

static int lo_fd_kind(int fd) {
    // Standard input, output and error are the process's streams (a terminal, a pipe, a log).
    if (fd <= 2) return LO_FD_QUIET;
    if (fd < LO_FD_KINDS) {
        int kind = atomic_load_explicit(&g_fd_kind[fd], memory_order_relaxed);
        if (kind != LO_FD_UNKNOWN) return kind;
    }
    struct stat status;
    int kind = LO_FD_QUIET;
    if (fstat(fd, &status) == 0) {
        if (S_ISREG(status.st_mode)) {
            struct statfs system;
            int pseudo = fstatfs(fd, &system) == 0 && (system.f_type == LO_PROC_MAGIC || system.f_type == LO_SYSFS_MAGIC);
            kind = pseudo ? LO_FD_QUIET : LO_FD_FILE;
        } else if (S_ISSOCK(status.st_mode)) {
            int domain = 0;
            socklen_t length = sizeof domain;
            int inet = getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) == 0 &&
                       (domain == AF_INET || domain == AF_INET6);
            kind = inet ? LO_FD_NETWORK : LO_FD_QUIET;
        }
    } else {
        return LO_FD_QUIET;
    }
    if (fd < LO_FD_KINDS) atomic_store_explicit(&g_fd_kind[fd], (uint8_t)kind, memory_order_relaxed);
    return kind;
}

// What a descriptor names, from /proc (only for a report): a path, "socket:[inode]", or its number.
static void lo_describe_fd(char *buffer, size_t size, int fd) {
    char link[32];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(link, buffer, size - 1);
    if (length <= 0) {
        snprintf(buffer, size, "descriptor %d", fd);
        return;
    }
    buffer[length] = 0;
}

// A file's call reads as what it does to the file ("reading /path"), so that the open, the reads
// and the close of one statement are one violation, their count its repeats; a socket's names the
// call ("connect of socket:[123]").
static void lo_check_fd(const char *function, int fd, int writes, void *caller) {
    int kind = lo_fd_kind(fd);
    if (kind == LO_FD_QUIET) return;
    char target[256], operation[320];
    lo_describe_fd(target, sizeof target, fd);
    if (kind == LO_FD_NETWORK) {
        snprintf(operation, sizeof operation, "%s of %s", function, target);
        lo_report(LO_BLOCKING_NETWORK, operation, 0, caller);
    } else {
        snprintf(operation, sizeof operation, "%s %s", writes ? "writing" : "reading", target);
        lo_report(writes ? LO_BLOCKING_DISK_WRITE : LO_BLOCKING_DISK_READ, operation, 0, caller);
    }
}

// Whether a path names what never waits for a disk: /proc, /sys and /dev.
static int lo_quiet_path(const char *path) {
    return path == NULL || strncmp(path, "/proc/", 6) == 0 || strncmp(path, "/sys/", 5) == 0 ||
           strncmp(path, "/dev/", 5) == 0;
}

// An open of `path` relative to `directory` (AT_FDCWD: the working directory), named by its
// absolute path as a read of the descriptor later will be.
static void lo_check_open(int directory, const char *path, int writes, void *caller) {
    if (lo_quiet_path(path)) return;
    char base[256] = "", operation[640];
    if (path[0] != '/') {
        if (directory == AT_FDCWD) {
            if (getcwd(base, sizeof base) == NULL) base[0] = 0;
        } else {
            lo_describe_fd(base, sizeof base, directory);
        }
    }
    snprintf(operation, sizeof operation, "%s %s%s%s", writes ? "writing" : "reading", base, base[0] ? "/" : "", path);
    lo_report(writes ? LO_BLOCKING_DISK_WRITE : LO_BLOCKING_DISK_READ, operation, 0, caller);
}

static int lo_open_writes(int flags) { return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0; }

// ---- the C library's functions --------------------------------------------------------------

typedef int (*lo_open_t)(const char *, int, ...);
typedef int (*lo_openat_t)(int, const char *, int, ...);
typedef FILE *(*lo_fopen_t)(const char *, const char *);
typedef ssize_t (*lo_rw_t)(int, void *, size_t);
typedef ssize_t (*lo_write_t)(int, const void *, size_t);
typedef ssize_t (*lo_prw_t)(int, void *, size_t, off_t);
typedef ssize_t (*lo_pwrite_t)(int, const void *, size_t, off_t);
typedef ssize_t (*lo_vec_t)(int, const struct iovec *, int);
typedef int (*lo_fd_t)(int);
typedef int (*lo_dup2_t)(int, int);
typedef int (*lo_dup3_t)(int, int, int);
typedef int (*lo_pipe_t)(int[2]);
typedef int (*lo_pipe2_t)(int[2], int);
typedef int (*lo_socketpair_t)(int, int, int, int[2]);
typedef int (*lo_eventfd_t)(unsigned int, int);
typedef int (*lo_fclose_t)(FILE *);
typedef int (*lo_socket_t)(int, int, int);
typedef int (*lo_connect_t)(int, const struct sockaddr *, socklen_t);
typedef int (*lo_accept_t)(int, struct sockaddr *, socklen_t *);
typedef int (*lo_accept4_t)(int, struct sockaddr *, socklen_t *, int);
typedef ssize_t (*lo_send_t)(int, const void *, size_t, int);
typedef ssize_t (*lo_sendto_t)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
typedef ssize_t (*lo_sendmsg_t)(int, const struct msghdr *, int);
typedef ssize_t (*lo_recv_t)(int, void *, size_t, int);
typedef ssize_t (*lo_recvfrom_t)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
typedef ssize_t (*lo_recvmsg_t)(int, struct msghdr *, int);
typedef int (*lo_getaddrinfo_t)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
LO_REAL(lo_open_t, open)
LO_REAL(lo_open_t, open64)
LO_REAL(lo_openat_t, openat)
LO_REAL(lo_openat_t, openat64)
LO_REAL(lo_fopen_t, fopen)
LO_REAL(lo_fopen_t, fopen64)
LO_REAL(lo_rw_t, read)
LO_REAL(lo_write_t, write)
LO_REAL(lo_prw_t, pread)
LO_REAL(lo_prw_t, pread64)
LO_REAL(lo_pwrite_t, pwrite)
LO_REAL(lo_pwrite_t, pwrite64)
LO_REAL(lo_vec_t, readv)
LO_REAL(lo_vec_t, writev)
LO_REAL(lo_fd_t, fsync)
LO_REAL(lo_fd_t, fdatasync)
LO_REAL(lo_fd_t, close)
LO_REAL(lo_dup2_t, dup2)
LO_REAL(lo_dup3_t, dup3)
LO_REAL(lo_fd_t, dup)
LO_REAL(lo_pipe_t, pipe)
LO_REAL(lo_pipe2_t, pipe2)
LO_REAL(lo_socketpair_t, socketpair)
LO_REAL(lo_eventfd_t, eventfd)
LO_REAL(lo_fclose_t, fclose)
LO_REAL(lo_socket_t, socket)
LO_REAL(lo_connect_t, connect)
LO_REAL(lo_accept_t, accept)
LO_REAL(lo_accept4_t, accept4)
LO_REAL(lo_send_t, send)
LO_REAL(lo_sendto_t, sendto)
LO_REAL(lo_sendmsg_t, sendmsg)
LO_REAL(lo_recv_t, recv)
LO_REAL(lo_recvfrom_t, recvfrom)
LO_REAL(lo_recvmsg_t, recvmsg)
LO_REAL(lo_getaddrinfo_t, getaddrinfo)
// open's mode is there only with O_CREAT or O_TMPFILE.
#define LO_MODE(flags, mode)                                                                     \
    mode_t mode = 0;                                                                             \
    if (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE) {                             \
        va_list arguments;                                                                       \
        va_start(arguments, flags);                                                              \
        mode = (mode_t)va_arg(arguments, int);                                                   \
        va_end(arguments);                                                                       \
    }

static int lo_opened(int fd) {
    lo_fd_forget(fd);
    return fd;
}

// The opens are variadic, which musttail cannot forward: their frames stay while the C library
// opens (the frames' source file tells analyses they are Liftoff's).
int open(const char *path, int flags, ...) {
    LO_MODE(flags, mode)
    if (lo_checking()) lo_check_open(AT_FDCWD, path, lo_open_writes(flags), LO_CALLER);
    return lo_opened(lo_real_open()(path, flags, mode));
}

int open64(const char *path, int flags, ...) {
    LO_MODE(flags, mode)
    if (lo_checking()) lo_check_open(AT_FDCWD, path, lo_open_writes(flags), LO_CALLER);
    return lo_opened(lo_real_open64()(path, flags, mode));
}

int openat(int directory, const char *path, int flags, ...) {
    LO_MODE(flags, mode)
    if (lo_checking()) lo_check_open(directory, path, lo_open_writes(flags), LO_CALLER);
    return lo_opened(lo_real_openat()(directory, path, flags, mode));
}

int openat64(int directory, const char *path, int flags, ...) {
    LO_MODE(flags, mode)
    if (lo_checking()) lo_check_open(directory, path, lo_open_writes(flags), LO_CALLER);
    return lo_opened(lo_real_openat64()(directory, path, flags, mode));
}

static int lo_fopen_writes(const char *mode) { return mode != NULL && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+')); }

FILE *fopen(const char *path, const char *mode) {
    if (lo_checking()) lo_check_open(AT_FDCWD, path, lo_fopen_writes(mode), LO_CALLER);
    FILE *file = lo_real_fopen()(path, mode);
    if (file != NULL) lo_fd_forget(fileno(file));
    return file;
}

FILE *fopen64(const char *path, const char *mode) {
    if (lo_checking()) lo_check_open(AT_FDCWD, path, lo_fopen_writes(mode), LO_CALLER);
    FILE *file = lo_real_fopen64()(path, mode);
    if (file != NULL) lo_fd_forget(fileno(file));
    return file;
}

// A new socket's number may have been another descriptor's: its kind is told afresh.
int socket(int domain, int type, int protocol) { return lo_opened(lo_real_socket()(domain, type, protocol)); }

static ssize_t lo_checked_read(int fd, void *buffer, size_t count) {
    lo_check_fd("read", fd, 0, LO_CALLER);
    LO_MUSTTAIL return lo_real_read()(fd, buffer, count);
}
LO_DECIDE(ssize_t, read, (int fd, void *buffer, size_t count), (fd, buffer, count))
ssize_t read(int fd, void *buffer, size_t count) {
    if (lo_is_unwind_pipe(fd)) {
        errno = EAGAIN; // libunwind's stand-in pipe is always empty
        return -1;
    }
    LO_DISPATCH(read, (fd, buffer, count));
}
// Standard output and error, handed to the output hook when one watches them (the agent: which
// thread wrote a --ready line). Told before the call, with the bytes the call is given.
static _Atomic(lo_output_hook) lo_output_watch;
void lo_set_output_hook(lo_output_hook hook) { atomic_store(&lo_output_watch, hook); }

static inline void lo_note_output(int fd, const void *buffer, size_t count) {
    if (__builtin_expect((unsigned)fd - 1u < 2u, 0)) {
        lo_output_hook hook = atomic_load_explicit(&lo_output_watch, memory_order_relaxed);
        if (hook != NULL) hook(fd, buffer, count);
    }
}

static ssize_t lo_checked_write(int fd, const void *buffer, size_t count) {
    lo_check_fd("write", fd, 1, LO_CALLER);
    LO_MUSTTAIL return lo_real_write()(fd, buffer, count);
}
LO_DECIDE(ssize_t, write, (int fd, const void *buffer, size_t count), (fd, buffer, count))
ssize_t write(int fd, const void *buffer, size_t count) {
    if (lo_is_unwind_pipe(fd)) {
        if (count == 0) return 0;
        if (fd == LO_UNWIND_PIPE_WRITE) return lo_unwind_pipe_write(buffer);
        errno = EBADF;
        return -1;
    }
    lo_note_output(fd, buffer, count);
    LO_DISPATCH(write, (fd, buffer, count));
}
LO_INTERPOSE(ssize_t, pread, (int fd, void *buffer, size_t count, off_t offset), (fd, buffer, count, offset),
             lo_check_fd("pread", fd, 0, LO_CALLER))
LO_INTERPOSE(ssize_t, pread64, (int fd, void *buffer, size_t count, off_t offset), (fd, buffer, count, offset),
             lo_check_fd("pread", fd, 0, LO_CALLER))
LO_INTERPOSE(ssize_t, pwrite, (int fd, const void *buffer, size_t count, off_t offset), (fd, buffer, count, offset),
             lo_check_fd("pwrite", fd, 1, LO_CALLER))
LO_INTERPOSE(ssize_t, pwrite64, (int fd, const void *buffer, size_t count, off_t offset), (fd, buffer, count, offset),
             lo_check_fd("pwrite", fd, 1, LO_CALLER))
LO_INTERPOSE(ssize_t, readv, (int fd, const struct iovec *vector, int count), (fd, vector, count),
             lo_check_fd("readv", fd, 0, LO_CALLER))
static ssize_t lo_checked_writev(int fd, const struct iovec *vector, int count) {
    lo_check_fd("writev", fd, 1, LO_CALLER);
    LO_MUSTTAIL return lo_real_writev()(fd, vector, count);
}
LO_DECIDE(ssize_t, writev, (int fd, const struct iovec *vector, int count), (fd, vector, count))
ssize_t writev(int fd, const struct iovec *vector, int count) {
    if (__builtin_expect((unsigned)fd - 1u < 2u, 0) && atomic_load_explicit(&lo_output_watch, memory_order_relaxed) != NULL) {
        // The start of what the vector holds, as one piece.
        char joined[LO_OUTPUT_NOTED];
        size_t used = 0;
        for (int index = 0; index < count && vector != NULL && used < sizeof joined; index++) {
            size_t take = vector[index].iov_len < sizeof joined - used ? vector[index].iov_len : sizeof joined - used;
            if (take > 0 && vector[index].iov_base != NULL) memcpy(joined + used, vector[index].iov_base, take);
            used += take;
        }
        lo_note_output(fd, joined, used);
    }
    LO_DISPATCH(writev, (fd, vector, count));
}
LO_INTERPOSE(int, fsync, (int fd), (fd), lo_check_fd("fsync", fd, 1, LO_CALLER))
LO_INTERPOSE(int, fdatasync, (int fd), (fd), lo_check_fd("fdatasync", fd, 1, LO_CALLER))
// A descriptor closed or replaced is told afresh when next used.
int close(int fd) {
    if (lo_is_unwind_pipe(fd)) return 0;
    lo_fd_forget(fd);
    LO_MUSTTAIL return lo_real_close()(fd);
}

int dup2(int old, int new) {
    lo_fd_forget(new);
    LO_MUSTTAIL return lo_real_dup2()(old, new);
}

int dup3(int old, int new, int flags) {
    lo_fd_forget(new);
    LO_MUSTTAIL return lo_real_dup3()(old, new, flags);
}

// Descriptors made by calls that open nothing by path (a pipe, a duplicate, an accepted
// connection, an eventfd) may reuse a number a file had: their kind is told afresh. fclose closes
// its descriptor inside the C library, where close is not seen.
int dup(int fd) { return lo_opened(lo_real_dup()(fd)); }
int eventfd(unsigned int value, int flags) { return lo_opened(lo_real_eventfd()(value, flags)); }

int pipe(int fds[2]) {
    if (lo_unwind_pipe_made(fds, LO_CALLER)) return 0;
    int result = lo_real_pipe()(fds);
    if (result == 0) {
        lo_fd_forget(fds[0]);
        lo_fd_forget(fds[1]);
    }
    return result;
}

int pipe2(int fds[2], int flags) {
    if (lo_unwind_pipe_made(fds, LO_CALLER)) return 0;
    int result = lo_real_pipe2()(fds, flags);
    if (result == 0) {
        lo_fd_forget(fds[0]);
        lo_fd_forget(fds[1]);
    }
    return result;
}

int socketpair(int domain, int type, int protocol, int fds[2]) {
    int result = lo_real_socketpair()(domain, type, protocol, fds);
    if (result == 0) {
        lo_fd_forget(fds[0]);
        lo_fd_forget(fds[1]);
    }
    return result;
}

int fclose(FILE *file) {
    if (file != NULL) lo_fd_forget(fileno(file));
    LO_MUSTTAIL return lo_real_fclose()(file);
}

// accept blocks: its frame stays while it waits (as the opens' do), to tell the new descriptor afresh.
int accept(int fd, struct sockaddr *address, socklen_t *length) {
    if (lo_checking()) lo_check_fd("accept", fd, 0, LO_CALLER);
    return lo_opened(lo_real_accept()(fd, address, length));
}

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    if (lo_checking()) lo_check_fd("accept", fd, 0, LO_CALLER);
    return lo_opened(lo_real_accept4()(fd, address, length, flags));
}
LO_INTERPOSE(int, connect, (int fd, const struct sockaddr *address, socklen_t length), (fd, address, length),
             lo_check_fd("connect", fd, 0, LO_CALLER))
LO_INTERPOSE(ssize_t, send, (int fd, const void *buffer, size_t count, int flags), (fd, buffer, count, flags),
             lo_check_fd("send", fd, 1, LO_CALLER))
LO_INTERPOSE(ssize_t, sendto,
             (int fd, const void *buffer, size_t count, int flags, const struct sockaddr *to, socklen_t length),
             (fd, buffer, count, flags, to, length), lo_check_fd("sendto", fd, 1, LO_CALLER))
LO_INTERPOSE(ssize_t, sendmsg, (int fd, const struct msghdr *message, int flags), (fd, message, flags),
             lo_check_fd("sendmsg", fd, 1, LO_CALLER))
LO_INTERPOSE(ssize_t, recv, (int fd, void *buffer, size_t count, int flags), (fd, buffer, count, flags),
             lo_check_fd("recv", fd, 0, LO_CALLER))
LO_INTERPOSE(ssize_t, recvfrom,
             (int fd, void *buffer, size_t count, int flags, struct sockaddr *from, socklen_t *length),
             (fd, buffer, count, flags, from, length), lo_check_fd("recvfrom", fd, 0, LO_CALLER))
LO_INTERPOSE(ssize_t, recvmsg, (int fd, struct msghdr *message, int flags), (fd, message, flags),
             lo_check_fd("recvmsg", fd, 0, LO_CALLER))

static void lo_check_lookup(const char *node, const char *service, void *caller) {
    char operation[320];
    snprintf(operation, sizeof operation, "getaddrinfo of %s", node ? node : service ? service : "(nothing)");
    lo_report(LO_BLOCKING_NETWORK, operation, 0, caller);
}

LO_INTERPOSE(int, getaddrinfo,
             (const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **result),
             (node, service, hints, result), lo_check_lookup(node, service, LO_CALLER))

// The C library's functions are looked up as the program loads, before any signal handler may
// call one (dlsym is not safe there); a call made earlier, from another object's constructor,
// looks its own up.
__attribute__((constructor)) static void lo_blocking_resolve(void) {
    lo_real_open();
    lo_real_open64();
    lo_real_openat();
    lo_real_openat64();
    lo_real_fopen();
    lo_real_fopen64();
    lo_real_read();
    lo_real_write();
    lo_real_pread();
    lo_real_pread64();
    lo_real_pwrite();
    lo_real_pwrite64();
    lo_real_readv();
    lo_real_writev();
    lo_real_fsync();
    lo_real_fdatasync();
    lo_real_close();
    lo_real_dup2();
    lo_real_dup3();
    lo_real_socket();
    lo_real_connect();
    lo_real_accept();
    lo_real_accept4();
    lo_real_send();
    lo_real_sendto();
    lo_real_sendmsg();
    lo_real_recv();
    lo_real_recvfrom();
    lo_real_recvmsg();
    lo_real_getaddrinfo();
}

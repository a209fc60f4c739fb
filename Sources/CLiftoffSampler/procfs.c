// Reading /proc files with system calls only: the agent reads them in signal handlers too, and
// the sampler thread reads a thread's schedstat at its checks. Below every other file.

#include "lo_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

size_t lo_read_proc_line(const char *path, char *buffer, size_t capacity) {
    if (capacity == 0) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t got;
    do {
        got = read(fd, buffer, capacity - 1);
    } while (got < 0 && errno == EINTR);
    close(fd);
    size_t used = got > 0 ? (size_t)got : 0;
    buffer[used] = 0;
    return used;
}

size_t lo_read_proc_file(const char *path, char *buffer, size_t capacity) {
    if (capacity == 0) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    size_t used = 0;
    while (used + 1 < capacity) {
        ssize_t got = read(fd, buffer + used, capacity - 1 - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
    }
    close(fd);
    buffer[used] = 0;
    return used;
}

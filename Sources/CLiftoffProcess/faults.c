// The page faults that read from storage, recorded by the kernel for a program `liftoff` runs:
// a major-fault software event per CPU on the child (inherited by its threads and processes,
// user mode only, so no privilege is needed for one's own child), with the mapping, exec and
// fork records that tell which file each faulting address belonged to.

#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lo_process.h"

/* Each CPU's ring: 128 data pages (512 KiB with 4 KiB pages), which the kernel's default
   perf_event_mlock_kb (516) allows an unprivileged user per CPU; about 10,000 faults. */
#define LO_FAULT_RING_PAGES 128
#define LO_FAULT_MAX_CPUS 1024

struct lo_faults {
    int count;
    size_t page;
    int fds[LO_FAULT_MAX_CPUS];
    void *rings[LO_FAULT_MAX_CPUS];
};

static size_t ring_bytes(const lo_faults *faults) { return (LO_FAULT_RING_PAGES + 1) * faults->page; }

void lo_faults_close(lo_faults *faults) {
    if (!faults) return;
    for (int cpu = 0; cpu < faults->count; cpu++) {
        if (faults->rings[cpu] && faults->rings[cpu] != MAP_FAILED) munmap(faults->rings[cpu], ring_bytes(faults));
        if (faults->fds[cpu] >= 0) close(faults->fds[cpu]);
    }
    free(faults);
}

lo_faults *lo_faults_open(int pid) {
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    if (cpus < 1) cpus = 1;
    if (cpus > LO_FAULT_MAX_CPUS) cpus = LO_FAULT_MAX_CPUS;
    lo_faults *faults = calloc(1, sizeof *faults);
    if (!faults) return NULL;
    long page = sysconf(_SC_PAGESIZE);
    faults->page = page > 0 ? (size_t)page : 4096;
    for (int cpu = 0; cpu < cpus; cpu++) faults->fds[cpu] = -1;
    faults->count = (int)cpus;
    for (int cpu = 0; cpu < cpus; cpu++) {
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.type = PERF_TYPE_SOFTWARE;
        attr.config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
        attr.sample_period = 1;
        attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
        /* Enabled from the start, not on exec: the kernel maps the executable and its loader
           during exec, and only an event already enabled sees those mappings. The few faults
           of the forked child before exec are told apart by its exec record. */
        attr.inherit = 1;
        attr.exclude_kernel = 1;
        attr.exclude_hv = 1;
        attr.mmap = 1;
        attr.mmap_data = 1;
        attr.mmap2 = 1;
        attr.comm = 1;
        attr.comm_exec = 1;
        attr.task = 1;
        attr.sample_id_all = 1;
        attr.use_clockid = 1;
        attr.clockid = CLOCK_MONOTONIC;
        int fd = (int)syscall(SYS_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
            /* A CPU that is offline has no events; any other refusal ends it. */
            if (errno == ENODEV || errno == ENOENT) continue;
            int saved = errno;
            lo_faults_close(faults);
            errno = saved;
            return NULL;
        }
        faults->fds[cpu] = fd;
        void *ring = mmap(NULL, ring_bytes(faults), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ring == MAP_FAILED) {
            int saved = errno;
            lo_faults_close(faults);
            errno = saved;
            return NULL;
        }
        faults->rings[cpu] = ring;
    }
    return faults;
}

size_t lo_faults_read(lo_faults *faults, void *out, size_t capacity) {
    if (!faults || !out) return 0;
    unsigned char *to = out;
    size_t copied = 0;
    size_t size = LO_FAULT_RING_PAGES * faults->page;
    for (int cpu = 0; cpu < faults->count; cpu++) {
        struct perf_event_mmap_page *meta = faults->rings[cpu];
        if (!meta) continue;
        const unsigned char *data = (const unsigned char *)meta + faults->page;
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        uint64_t tail = meta->data_tail;
        while (tail < head) {
            struct perf_event_header header;
            for (size_t i = 0; i < sizeof header; i++) ((unsigned char *)&header)[i] = data[(tail + i) % size];
            if (header.size < sizeof header || header.size > head - tail) break;
            if (copied + header.size > capacity) break;
            for (size_t i = 0; i < header.size; i++) to[copied + i] = data[(tail + i) % size];
            copied += header.size;
            tail += header.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    }
    return copied;
}

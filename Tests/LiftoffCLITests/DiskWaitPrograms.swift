import Foundation
import LiftoffTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The programs and the data file the disk-wait tests run: a 128 MB file evicted from the page
/// cache, and a program that faults its pages in.
extension DiskWaitTests {
    /// A program that maps FILE and reads one byte of random pages (MADV_RANDOM: no read-ahead),
    /// reporting its wall and CPU time, its wait for a core and what it read from storage meanwhile.
    static let toucher = """
        #include <fcntl.h>
        #include <stdio.h>
        #include <sys/mman.h>
        #include <sys/stat.h>
        #include <time.h>
        static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
        static double runqueue_ms(void) {
            unsigned long long cpu = 0, wait = 0;
            FILE *f = fopen("/proc/thread-self/schedstat", "r");
            if (f) { if (fscanf(f, "%llu %llu", &cpu, &wait) != 2) wait = 0; fclose(f); }
            return wait / 1e6;
        }
        static unsigned long long read_bytes(void) {
            unsigned long long bytes = 0;
            char line[128];
            FILE *f = fopen("/proc/self/io", "r");
            while (f && fgets(line, sizeof line, f)) if (sscanf(line, "read_bytes: %llu", &bytes) == 1) break;
            if (f) fclose(f);
            return bytes;
        }
        __attribute__((noinline)) unsigned long touch_pages(const unsigned char *data, size_t pages) {
            unsigned long sum = 0, x = 12345;
            for (size_t i = 0; i < pages; i++) {
                x = x * 6364136223846793005ul + 1442695040888963407ul;
                sum += data[((x >> 17) % pages) * 4096];
            }
            return sum;
        }
        int main(int argc, char **argv) {
            int fd = open(argv[1], O_RDONLY);
            struct stat st;
            if (fd < 0 || fstat(fd, &st) != 0) return 1;
            const unsigned char *data = mmap(0, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
            madvise((void *)data, st.st_size, MADV_RANDOM);
            unsigned long long read_before = read_bytes();
            double wall = now(CLOCK_MONOTONIC), cpu = now(CLOCK_THREAD_CPUTIME_ID), queued = runqueue_ms();
            unsigned long sum = touch_pages(data, st.st_size / 4096 / 4);
            printf("touch_pages: %.1f ms wall, %.1f ms CPU, %.1f ms waiting for a core, %llu bytes read from storage (%lu)\\n",
                   now(CLOCK_MONOTONIC) - wall, now(CLOCK_THREAD_CPUTIME_ID) - cpu, runqueue_ms() - queued,
                   read_bytes() - read_before, sum);
            return 0;
        }
        """

    /// A 128 MB file of random bytes on a disk-backed file system, written through to the disk.
    static func dataFile() throws -> String {
        let path = AgentPrograms.folder.appendingPathComponent("random-128M.bin").path
        if FileManager.default.fileExists(atPath: path) { return path }
        let result = try runToEnd("/bin/sh", ["-c", "head -c 134217728 /dev/urandom > '\(path).tmp' && sync '\(path).tmp' && mv '\(path).tmp' '\(path)'"])
        try #require(result.status == 0, "\(result.output)")
        return path
    }

    /// Evicts `path` from the page cache (no root needed: its pages are clean and mapped by nobody).
    static func evict(_ path: String) throws {
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
    }
}

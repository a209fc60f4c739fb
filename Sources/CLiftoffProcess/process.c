// Process helpers Swift cannot call directly (syscall(2) is variadic).

#include <sys/syscall.h>
#include <unistd.h>

#include "lo_process.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same on every architecture */
#endif

int lo_pidfd_open(int pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#ifndef SYS_close_range
#define SYS_close_range 436 /* the same on every architecture */
#endif

int lo_spawn(char *const argv[], char *const envp[], int out_fd, int err_fd) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return -1;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int saved = errno;
        close(report[0]);
        close(report[1]);
        errno = saved;
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls from here to exec. */
        int failure = 0;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) {
            failure = errno ? errno : ESRCH;
            goto fail;
        }
        setpgid(0, 0);
        /* The program starts with default signal handling and nothing blocked, whatever this
           process ignores (SIGPIPE) or blocks. */
        struct sigaction action;
        for (int sig = 1; sig < NSIG; sig++) {
            if (sigaction(sig, NULL, &action) == 0 && action.sa_handler == SIG_IGN) signal(sig, SIG_DFL);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
            failure = errno;
            goto fail;
        }
        /* Every other descriptor closes at exec (the report pipe already does). */
        if (syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) != 0) {
            for (int fd = 3; fd < 65536; fd++) {
                if (fd != report[1]) fcntl(fd, F_SETFD, FD_CLOEXEC);
            }
        }
        execvpe(argv[0], argv, envp);
        failure = errno;
    fail:
        (void)!write(report[1], &failure, sizeof failure);
        _exit(127);
    }
    close(report[1]);
    int failure = 0;
    ssize_t got;
    do {
        got = read(report[0], &failure, sizeof failure);
    } while (got < 0 && errno == EINTR);
    close(report[0]);
    if (got == (ssize_t)sizeof failure) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        errno = failure;
        return -1;
    }
    return pid;
}

int lo_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1);
}

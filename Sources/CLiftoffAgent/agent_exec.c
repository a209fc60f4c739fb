// Following the programs a recorded program runs.
//
// exec keeps the process (and its pid) but replaces the program: the agent writes the old
// program's recording first, and the new one's constructor goes on with the next image number.
// A child process runs the agent too, as long as its environment still preloads it: every exec
// and spawn here hands on an environment that does (the program may have built its own, or
// cleared it), with LIFTOFF_AGENT_IMAGE saying whose child it is and when it was forked.
//
// These run in a vfork() child too (the parent's memory, the parent's stack): nothing here
// allocates, locks or changes a global but the recording's own state, and only in the process
// that records (never in a vfork child, whose pid differs).

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recording.h"
#include "agent_exec.h"
#include "lo_sampler.h"

extern char **environ;

#define LO_MAX_ENV 4096
#define LO_MAX_ARGS 4096

typedef struct lo_env {
    char *entries[LO_MAX_ENV + 8];
    char image[96];
    char preload[PATH_MAX * 2 + 32];
    char audit[PATH_MAX * 2 + 32];
    char out[PATH_MAX + 32];
    char rate[48];
    char children[48];
    int with_agent; // `entries` run the new program with the agent
} lo_env;

static int has_prefix(const char *entry, const char *name) {
    size_t length = strlen(name);
    return strncmp(entry, name, length) == 0 && entry[length] == '=';
}

static void set_entry(char *buffer, size_t capacity, const char *name, const char *value) {
    size_t name_length = strlen(name), value_length = strlen(value);
    if (name_length + value_length + 2 > capacity) value_length = capacity - name_length - 2;
    memcpy(buffer, name, name_length);
    buffer[name_length] = '=';
    memcpy(buffer + name_length + 1, value, value_length);
    buffer[name_length + 1 + value_length] = 0;
}

// Whether LD_PRELOAD's value names this library.
static int preloads_agent(const char *value) {
    size_t length = strlen(lo_agent.library);
    for (const char *at = value; (at = strstr(at, lo_agent.library)) != NULL; at += length) {
        char after = at[length];
        if ((at == value || at[-1] == ':' || at[-1] == ' ') && (after == 0 || after == ':' || after == ' ')) return 1;
    }
    return 0;
}

// `envp` with the agent's variables as this process hands them on, in `env` (no allocation).
// The image variable says which process the new program runs in and when that one started
// (`pid` 0: not known yet, a spawn), and the image number it takes.
static char *const *without_agent(char *const *envp, lo_env *env);

static char *const *agent_environment(char *const *envp, lo_env *env, pid_t pid, uint64_t start, uint32_t image) {
    if (lo_agent.library[0] == 0 || lo_agent.directory[0] == 0) return envp;
    // A helper process that Liftoff itself starts, marked with LIFTOFF_AGENT_EXCLUDE=1, is not
    // part of the launch.
    for (char *const *entry = envp; entry && *entry; entry++) {
        if (strcmp(*entry, LO_ENV_EXCLUDE "=1") == 0) return without_agent(envp, env);
    }
    size_t count = 0;
    const char *preload = NULL;
    for (char *const *entry = envp; entry && *entry; entry++) {
        if (has_prefix(*entry, "LD_PRELOAD")) preload = *entry + 11;
        if (has_prefix(*entry, LO_ENV_IMAGE) || has_prefix(*entry, LO_ENV_OUT) || has_prefix(*entry, LO_ENV_RATE) ||
            has_prefix(*entry, LO_ENV_CHILDREN) || has_prefix(*entry, LO_ENV_HELD) || has_prefix(*entry, "LD_PRELOAD")) {
            continue;
        }
        if (count == LO_MAX_ENV) return envp;
        env->entries[count++] = *entry;
    }
    if (preload && preloads_agent(preload)) {
        set_entry(env->preload, sizeof env->preload, "LD_PRELOAD", preload);
    } else {
        char value[PATH_MAX * 2];
        size_t length = strlen(lo_agent.library);
        memcpy(value, lo_agent.library, length);
        value[length] = 0;
        if (preload && *preload && length + 1 + strlen(preload) < sizeof value) {
            value[length] = ':';
            strcpy(value + length + 1, preload);
        }
        set_entry(env->preload, sizeof env->preload, "LD_PRELOAD", value);
    }
    char rate[24], number[24];
    lo_agent_format_u64(rate, lo_agent.rate_hz);
    set_entry(env->out, sizeof env->out, LO_ENV_OUT, lo_agent.directory);
    set_entry(env->rate, sizeof env->rate, LO_ENV_RATE, rate);
    set_entry(env->children, sizeof env->children, LO_ENV_CHILDREN, lo_agent.follows_children ? "1" : "0");
    char value[80];
    size_t length = lo_agent_format_u64(value, (uint64_t)pid);
    value[length++] = ':';
    length += lo_agent_format_u64(value + length, start);
    value[length++] = ':';
    lo_agent_format_u64(number, image);
    strcpy(value + length, number);
    set_entry(env->image, sizeof env->image, LO_ENV_IMAGE, value);
    env->entries[count++] = env->preload;
    env->entries[count++] = env->out;
    env->entries[count++] = env->rate;
    env->entries[count++] = env->children;
    env->entries[count++] = env->image;
    env->entries[count] = NULL;
    env->with_agent = 1;
    return env->entries;
}

// `list` (paths separated by colons or spaces) without `library`, in `value`: its length.
static size_t without_library(const char *list, const char *library, char *value, size_t capacity) {
    size_t length = 0, own = strlen(library);
    for (const char *at = list; *at;) {
        size_t word = strcspn(at, ": ");
        int ours = own > 0 && word == own && memcmp(at, library, own) == 0;
        if (!ours && word > 0 && length + word + 2 < capacity) {
            if (length) value[length++] = ':';
            memcpy(value + length, at, word);
            length += word;
        }
        at += word;
        if (*at) at++;
    }
    value[length] = 0;
    return length;
}

// Liftoff's audit library, libLiftoffAudit.so beside the agent, in `path` ("" when too long).
static void audit_library(char path[PATH_MAX]) {
    static const char name[] = "libLiftoffAudit.so";
    const char *slash = strrchr(lo_agent.library, '/');
    size_t folder = slash ? (size_t)(slash - lo_agent.library) + 1 : 0;
    path[0] = 0;
    if (folder + sizeof name > PATH_MAX) return;
    memcpy(path, lo_agent.library, folder);
    memcpy(path + folder, name, sizeof name);
}

// `envp` without the agent (a child not to be profiled, --no-children): it then does not even
// load the agent's library, nor Liftoff's audit library.
static char *const *without_agent(char *const *envp, lo_env *env) {
    if (lo_agent.library[0] == 0) return envp;
    size_t count = 0;
    for (char *const *entry = envp; entry && *entry; entry++) {
        if (has_prefix(*entry, LO_ENV_IMAGE) || has_prefix(*entry, LO_ENV_OUT) || has_prefix(*entry, LO_ENV_RATE) ||
            has_prefix(*entry, LO_ENV_CHILDREN) || has_prefix(*entry, LO_ENV_ROOT) || has_prefix(*entry, LO_ENV_HELD)) {
            continue;
        }
        if (count == LO_MAX_ENV) return envp;
        if (has_prefix(*entry, "LD_PRELOAD") && preloads_agent(*entry + 11)) {
            // The other preloaded libraries stay.
            char value[PATH_MAX * 2];
            if (without_library(*entry + 11, lo_agent.library, value, sizeof value) == 0) continue;
            set_entry(env->preload, sizeof env->preload, "LD_PRELOAD", value);
            env->entries[count++] = env->preload;
            continue;
        }
        if (has_prefix(*entry, "LD_AUDIT")) {
            // So do the other audit libraries; Liftoff's, beside the agent, goes.
            char value[PATH_MAX * 2];
            char audit[PATH_MAX];
            audit_library(audit);
            if (without_library(*entry + 9, audit, value, sizeof value) == 0) continue;
            set_entry(env->audit, sizeof env->audit, "LD_AUDIT", value);
            env->entries[count++] = env->audit;
            continue;
        }
        env->entries[count++] = *entry;
    }
    env->entries[count] = NULL;
    return env->entries;
}

// Before an exec: the environment the new program gets, and whether this process's recording
// was written for it (sampling resumes if the exec fails).
static char *const *before_exec(char *const *envp, lo_env *env, int *ended, const char *target) {
    *ended = 0;
    env->with_agent = 0;
    if (lo_agent.directory[0] == 0) return envp;
    pid_t pid = (pid_t)syscall(SYS_getpid);
    if (lo_agent_records()) {
        uint32_t next = lo_agent.image == UINT32_MAX ? UINT32_MAX : lo_agent.image + 1;
        // A fork child that goes on as another program before it was sampled (a shell running a
        // command) recorded nothing: the next program's recording says when the process started
        // and who its parent is, so this one is not written (half the files of a shell's tree).
        if (pid == lo_agent_forked_pid && lo_agent_recording_is_empty()) {
            return agent_environment(envp, env, pid, lo_agent.process_start_ns, next);
        }
        // The recording names the program the process goes on as: if that one leaves no
        // recording (static, setuid), the profile can say which program it could not follow.
        lo_agent_set_exec_target(target);
        lo_agent_write_stopped(LO_AGENT_ENDED_BY_EXEC);
        *ended = 1;
        return agent_environment(envp, env, pid, lo_agent.process_start_ns, next);
    }
    if (!lo_agent.follows_children || atomic_load(&lo_agent_crashed)) return without_agent(envp, env);
    // A child: forked (its fork time is known) or vforked (as a shell runs a command: it runs
    // nothing but this exec, so the exec's time is its start, and the new program's pre-main is
    // measured from it).
    uint64_t start = pid == lo_agent_forked_pid ? lo_agent_fork_ns : lo_monotonic_ns();
    return agent_environment(envp, env, pid, start, 0);
}

static void after_failed_exec(int ended) {
    if (!ended) return;
    int saved = errno;
    lo_agent_resume();
    errno = saved;
}

// The definition each wrapper stands in for: the next one in the lookup order, looked up once
// (lo_agent_find_exec does it before main, so that a vfork child does not take the loader's lock).
#define LO_NEXT(type, name) ((type)next_function(name))

static _Atomic(void *) g_next[8];
static const char *const g_next_names[8] = {"execve", "execvpe", "fexecve", "execveat", "posix_spawn", "posix_spawnp"};

static void *next_function(const char *name) {
    for (int i = 0; i < 8 && g_next_names[i]; i++) {
        if (strcmp(g_next_names[i], name) != 0) continue;
        void *function = atomic_load(&g_next[i]);
        if (function == NULL) {
            function = dlsym(RTLD_NEXT, name);
            atomic_store(&g_next[i], function);
        }
        return function;
    }
    return NULL;
}

void lo_agent_find_exec(void) {
    for (int i = 0; i < 8 && g_next_names[i]; i++) next_function(g_next_names[i]);
}

typedef int (*lo_execve_function)(const char *, char *const[], char *const[]);
typedef int (*lo_fexecve_function)(int, char *const[], char *const[]);
typedef int (*lo_execveat_function)(int, const char *, char *const[], char *const[], int);
typedef int (*lo_spawn_function)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                                 char *const[], char *const[]);

// Holds SIGPROF blocked on the calling thread across an exec whose new program loads the agent,
// and tells that agent so (LO_ENV_HELD=1, appended to `env`), unless the program had it blocked
// itself. An exec keeps a pending signal and resets its handler: a SIGPROF the sampler sent, or a
// retake timer raised, just before would end the new program before its loader is done (a
// shell's command died of SIGPROF under load). The new program's agent takes what is pending and
// unblocks SIGPROF before anything else. 1 when held; `saved` is the mask to restore.
static int hold_sigprof(lo_env *env, sigset_t *saved) {
    if (!env->with_agent) return 0;
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    if (pthread_sigmask(SIG_BLOCK, &prof, saved) != 0 || sigismember(saved, SIGPROF)) return 0;
    size_t count = 0;
    while (env->entries[count]) count++;
    if (count < LO_MAX_ENV + 7) {
        env->entries[count++] = (char *)LO_ENV_HELD "=1";
        env->entries[count] = NULL;
    }
    return 1;
}

// Runs the exec `call` with `passed`, the environment the new program gets (see before_exec).
#define LO_EXEC(target, call)                                            \
    do {                                                                 \
        lo_env env;                                                      \
        int ended;                                                       \
        sigset_t saved;                                                  \
        char *const *passed = before_exec(envp, &env, &ended, target);   \
        int held = hold_sigprof(&env, &saved);                           \
        int result = (call);                                             \
        int failure = errno;                                             \
        if (held) pthread_sigmask(SIG_SETMASK, &saved, NULL);            \
        errno = failure;                                                 \
        after_failed_exec(ended);                                        \
        return result;                                                   \
    } while (0)

int execve(const char *path, char *const argv[], char *const envp[]) {
    // A shell looking for a command tries each PATH entry in turn: an attempt that cannot succeed
    // is not a program of the process, and costs no recording (one system call to tell).
    if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) != 0) {
        return LO_NEXT(lo_execve_function, "execve")(path, argv, envp);
    }
    LO_EXEC(path, LO_NEXT(lo_execve_function, "execve")(path, argv, passed));
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    LO_EXEC(file, LO_NEXT(lo_execve_function, "execvpe")(file, argv, passed));
}

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }
int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

int fexecve(int fd, char *const argv[], char *const envp[]) {
    LO_EXEC(argv[0] != NULL ? argv[0] : "", LO_NEXT(lo_fexecve_function, "fexecve")(fd, argv, passed));
}

int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
    LO_EXEC(path, LO_NEXT(lo_execveat_function, "execveat")(dirfd, path, argv, passed, flags));
}

// execl, execle, execlp: their arguments, up to the NULL that ends them, as an array on the stack
// (`argv` holds LO_MAX_ARGS + 1).
static void collect_args(const char *first, va_list *list, char **argv) {
    size_t count = 1;
    argv[0] = (char *)first;
    while (argv[count - 1] != NULL && count < LO_MAX_ARGS) argv[count++] = va_arg(*list, char *);
    argv[count < LO_MAX_ARGS ? count : LO_MAX_ARGS - 1] = NULL;
}

int execl(const char *path, const char *arg, ...) {
    char *argv[LO_MAX_ARGS + 1];
    va_list list;
    va_start(list, arg);
    collect_args(arg, &list, argv);
    va_end(list);
    return execve(path, argv, environ);
}

int execlp(const char *file, const char *arg, ...) {
    char *argv[LO_MAX_ARGS + 1];
    va_list list;
    va_start(list, arg);
    collect_args(arg, &list, argv);
    va_end(list);
    return execvpe(file, argv, environ);
}

int execle(const char *path, const char *arg, ...) {
    char *argv[LO_MAX_ARGS + 1];
    va_list list;
    va_start(list, arg);
    collect_args(arg, &list, argv);
    char *const *envp = va_arg(list, char *const *);
    va_end(list);
    return execve(path, argv, envp);
}

// A spawned child's pid is not known before it runs: its constructor takes the spawn's time.
static int spawn(const char *name, pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attributes, char *const argv[], char *const envp[]) {
    lo_env env;
    char *const *passed = envp;
    if (lo_agent.directory[0] != 0) {
        passed = lo_agent.follows_children && !atomic_load(&lo_agent_crashed) ? agent_environment(envp, &env, 0, lo_monotonic_ns(), 0) : without_agent(envp, &env);
    }
    return LO_NEXT(lo_spawn_function, name)(pid, path, actions, attributes, argv, passed);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                const posix_spawnattr_t *attributes, char *const argv[], char *const envp[]) {
    return spawn("posix_spawn", pid, path, actions, attributes, argv, envp);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                 const posix_spawnattr_t *attributes, char *const argv[], char *const envp[]) {
    return spawn("posix_spawnp", pid, file, actions, attributes, argv, envp);
}

#if defined(__linux__)
#define _GNU_SOURCE // pipe2, posix_spawn_file_actions_addclosefrom_np
#endif
#include "CPinStoreSpawn.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <crt_externs.h> // a shared library has no direct access to `environ` there
#define CPINSTORE_ENVIRON (*_NSGetEnviron())
#else
extern char **environ;
#define CPINSTORE_ENVIRON environ
#endif

/// `descriptor` moved to 3 or above (close-on-exec), so that no file action aimed at standard
/// input, output or error can overwrite it first: a process started with 0, 1 or 2 closed gets
/// those numbers back from `pipe` and `open`. -1 when it cannot be moved (`descriptor` closed).
static int aboveStandardStreams(int descriptor) {
    if (descriptor < 0 || descriptor > 2) return descriptor;
    int moved = fcntl(descriptor, F_DUPFD_CLOEXEC, 3);
    int saved = errno;
    close(descriptor);
    errno = saved;
    return moved;
}

/// A pipe whose two ends are close-on-exec (atomically where the system can) and above the
/// standard streams.
static int cloexecPipe(int ends[2]) {
#if defined(__linux__)
    if (pipe2(ends, O_CLOEXEC) != 0) return -1;
#else
    if (pipe(ends) != 0) return -1;
    fcntl(ends[0], F_SETFD, FD_CLOEXEC);
    fcntl(ends[1], F_SETFD, FD_CLOEXEC);
#endif
    ends[0] = aboveStandardStreams(ends[0]);
    ends[1] = aboveStandardStreams(ends[1]);
    if (ends[0] < 0 || ends[1] < 0) {
        int saved = errno;
        if (ends[0] >= 0) close(ends[0]);
        if (ends[1] >= 0) close(ends[1]);
        ends[0] = ends[1] = -1;
        errno = saved;
        return -1;
    }
    return 0;
}

pid_t CPinStoreSpawn_start(const char *path, char *const argv[], int inputDescriptor,
                           int *inputWrite, int *outputRead, int *errorRead, int ownProcessGroup) {
    int *ours[3] = { inputWrite, outputRead, errorRead };
    int pipes[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
    int input = -1; // a copy of inputDescriptor above the standard streams
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int failure = posix_spawn_file_actions_init(&actions);
    if (failure != 0) { errno = failure; return -1; }
    failure = posix_spawnattr_init(&attributes);
    if (failure != 0) { posix_spawn_file_actions_destroy(&actions); errno = failure; return -1; }
    for (int stream = 0; stream < 3 && failure == 0; stream++) {
        if (stream == 0 && inputDescriptor >= 0) {
            input = fcntl(inputDescriptor, F_DUPFD_CLOEXEC, 3);
            failure = input < 0 ? errno : posix_spawn_file_actions_adddup2(&actions, input, 0);
        } else if (ours[stream] == NULL) {
            failure = posix_spawn_file_actions_addopen(&actions, stream, "/dev/null", stream == 0 ? O_RDONLY : O_WRONLY, 0);
        } else if (cloexecPipe(pipes[stream]) != 0) {
            failure = errno;
        } else {
            // The child's end: the reading one for input, the writing one for output. dup2
            // clears its close-on-exec flag in the child.
            failure = posix_spawn_file_actions_adddup2(&actions, pipes[stream][stream == 0 ? 0 : 1], stream);
        }
    }
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    sigset_t none, standard;
    sigemptyset(&none);
    sigemptyset(&standard);
    for (int signalNumber = 1; signalNumber < 32; signalNumber++) {
        if (signalNumber != SIGKILL && signalNumber != SIGSTOP) sigaddset(&standard, signalNumber);
    }
    if (failure == 0) failure = posix_spawnattr_setsigmask(&attributes, &none);
    if (failure == 0) failure = posix_spawnattr_setsigdefault(&attributes, &standard);
    if (ownProcessGroup) {
        flags |= POSIX_SPAWN_SETPGROUP;
        if (failure == 0) failure = posix_spawnattr_setpgroup(&attributes, 0);
    }
#if defined(__APPLE__)
    // Every other descriptor closes in the child.
    flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // Every other descriptor closes in the child, even one opened without close-on-exec.
    if (failure == 0) failure = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    if (failure == 0) failure = posix_spawnattr_setflags(&attributes, flags);
    pid_t pid = -1;
    if (failure == 0) failure = posix_spawn(&pid, path, &actions, &attributes, argv, CPINSTORE_ENVIRON);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (input >= 0) close(input);
    for (int stream = 0; stream < 3; stream++) {
        if (pipes[stream][0] < 0) continue;
        int childEnd = stream == 0 ? 0 : 1;
        close(pipes[stream][childEnd]);
        if (failure == 0) {
            *ours[stream] = pipes[stream][1 - childEnd];
        } else {
            close(pipes[stream][1 - childEnd]);
        }
    }
    if (failure != 0) { errno = failure; return -1; }
    return pid;
}

int CPinStoreSpawn_wait(pid_t pid, int *exitStatus, int *signalNumber, int reap) {
    siginfo_t info;
    int result;
    do {
        info.si_pid = 0;
        result = waitid(P_PID, (id_t)pid, &info, WEXITED | (reap ? 0 : WNOWAIT));
    } while (result < 0 && errno == EINTR);
    if (result < 0) return -1;
    *exitStatus = info.si_code == CLD_EXITED ? info.si_status : -1;
    *signalNumber = (info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED) ? info.si_status : -1;
    return 0;
}

void CPinStoreSpawn_reap(pid_t pid) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
}

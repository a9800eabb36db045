#if defined(__linux__)
#define _GNU_SOURCE // pipe2, posix_spawn_file_actions_addclosefrom_np
#endif
#include "CPinStoreSpawn.h"
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/// A pipe whose two ends are close-on-exec (atomically where the system can).
static int cloexecPipe(int ends[2]) {
#if defined(__linux__)
    return pipe2(ends, O_CLOEXEC);
#else
    if (pipe(ends) != 0) return -1;
    fcntl(ends[0], F_SETFD, FD_CLOEXEC);
    fcntl(ends[1], F_SETFD, FD_CLOEXEC);
    return 0;
#endif
}

pid_t CPinStoreSpawn_start(const char *path, char *const argv[], int inputDescriptor,
                           int *inputWrite, int *outputRead, int *errorRead) {
    int *ours[3] = { inputWrite, outputRead, errorRead };
    int pipes[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } };
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int failure = posix_spawn_file_actions_init(&actions);
    if (failure != 0) { errno = failure; return -1; }
    failure = posix_spawnattr_init(&attributes);
    if (failure != 0) { posix_spawn_file_actions_destroy(&actions); errno = failure; return -1; }
    for (int stream = 0; stream < 3 && failure == 0; stream++) {
        if (stream == 0 && inputDescriptor >= 0) {
            failure = posix_spawn_file_actions_adddup2(&actions, inputDescriptor, 0);
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
#if defined(__APPLE__)
    // Every other descriptor closes in the child.
    if (failure == 0) failure = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_CLOEXEC_DEFAULT);
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    // Every other descriptor closes in the child, even one opened without close-on-exec.
    if (failure == 0) failure = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    pid_t pid = -1;
    if (failure == 0) failure = posix_spawn(&pid, path, &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
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

int CPinStoreSpawn_wait(pid_t pid, int *exitStatus, int *signalNumber) {
    int status = 0;
    pid_t waited;
    do {
        waited = waitpid(pid, &status, 0);
    } while (waited < 0 && errno == EINTR);
    if (waited < 0) return -1;
    *exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *signalNumber = WIFSIGNALED(status) ? WTERMSIG(status) : -1;
    return 0;
}

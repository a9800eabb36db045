#include "CPinStoreTestSupport.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#if defined(__linux__)
#include <malloc.h>
#endif

size_t CPinStoreTestSupport_heapInUse(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    return mallinfo2().uordblks;
#else
    return 0;
#endif
}

/// A TCP socket bound to 127.0.0.1 at a port the kernel picks, listening with `backlog` (or not
/// at all when it is 0). Returns the descriptor and sets `*port`, or -1.
static int loopbackSocket(int *port, int backlog) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = inet_addr("127.0.0.1");
    address.sin_port = 0;
    socklen_t length = sizeof address;
    if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0 || (backlog > 0 && listen(fd, backlog) != 0)
        || getsockname(fd, (struct sockaddr *)&address, &length) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(address.sin_port);
    return fd;
}

int CPinStoreTestSupport_silentListener(int *port) {
    return loopbackSocket(port, 16);
}

int CPinStoreTestSupport_closedPort(int *port) {
    // Bound, never listening: a connection is refused, and nobody else can bind the port.
    return loopbackSocket(port, 0);
}

void CPinStoreTestSupport_close(int descriptor) {
    close(descriptor);
}

int CPinStoreTestSupport_allowDescriptors(int wanted) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < (rlim_t)wanted) {
        if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < (rlim_t)wanted) return 0;
        limit.rlim_cur = (rlim_t)wanted;
        if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    }
    return 1;
}

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include "CAtsgateShims.h"

ssize_t atsgate_splice(int fd_in, int fd_out, size_t length) {
    return splice(fd_in, NULL, fd_out, NULL, length, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

int atsgate_pipe(int fds[2]) {
    return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
}

int atsgate_accept(int fd, struct sockaddr *address, socklen_t *length) {
    return accept4(fd, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int atsgate_socket(int domain, int type) {
    return socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

int atsgate_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

int atsgate_affinity_cpu_count(void) {
    // The kernel refuses (EINVAL) a mask smaller than its own; grow until it fits.
    for (int cpus = 1024; cpus <= (1 << 20); cpus *= 2) {
        cpu_set_t *set = CPU_ALLOC(cpus);
        if (set == NULL) return -1;
        size_t size = CPU_ALLOC_SIZE(cpus);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            int count = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return count;
        }
        int saved = errno;
        CPU_FREE(set);
        if (saved != EINVAL) {
            errno = saved;
            return -1;
        }
    }
    errno = EINVAL;
    return -1;
}

#ifndef ATSGATE_SHIMS_H
#define ATSGATE_SHIMS_H
// GNU calls and macros Swift cannot import directly: splice(2), pipe2(2), accept4(2) and the CPU_*
// macros of sched_getaffinity(2) need _GNU_SOURCE,
// and Glibc's Swift module does not export <sys/epoll.h>.
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/epoll.h>

/// splice(2) with SPLICE_F_MOVE | SPLICE_F_NONBLOCK; returns bytes moved or -1 with errno set.
ssize_t atsgate_splice(int fd_in, int fd_out, size_t length);
/// pipe2(2) with O_NONBLOCK | O_CLOEXEC.
int atsgate_pipe(int fds[2]);
/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC.
int atsgate_accept(int fd, struct sockaddr *address, socklen_t *length);
/// socket(2) with SOCK_NONBLOCK | SOCK_CLOEXEC.
int atsgate_socket(int domain, int type);
/// eventfd(2) with EFD_NONBLOCK | EFD_CLOEXEC (Glibc's Swift module does not export <sys/eventfd.h>).
int atsgate_eventfd(void);
/// How many CPUs sched_getaffinity(2) lets this process run on (CPU_COUNT_S, a macro), sized for
/// machines of any CPU count; -1 with errno set when the call fails.
int atsgate_affinity_cpu_count(void);
#endif

#ifndef ATSGATE_SHIMS_H
#define ATSGATE_SHIMS_H
// GNU calls and macros Swift cannot import directly: splice(2), pipe2(2), accept4(2), recvmmsg(2) and
// the CPU_* macros of sched_getaffinity(2) need _GNU_SOURCE, netfilter's socket options live in
// kernel headers that clash with glibc's,
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

// The transparent listeners (netfilter's redirect and TPROXY) and the QUIC listener's UDP socket.
/// The original destination of a connection that netfilter NAT redirected (nftables redirect/dnat,
/// iptables REDIRECT): getsockopt SO_ORIGINAL_DST for IPv4, IP6T_SO_ORIGINAL_DST for IPv6, chosen by
/// the socket's own family; 0, or -1 with errno set (ENOENT: conntrack knows no such connection).
int atsgate_original_destination(int fd, struct sockaddr_storage *address);
/// IP_TRANSPARENT (AF_INET) or IPV6_TRANSPARENT (AF_INET6) on, for a TPROXY socket; needs
/// CAP_NET_ADMIN (or CAP_NET_RAW). 0, or -1 with errno set.
int atsgate_set_transparent(int fd, int family);
/// IP_RECVORIGDSTADDR or IPV6_RECVORIGDSTADDR on: every datagram comes with its destination address
/// as a control message (its original destination under TPROXY). 0, or -1 with errno set.
int atsgate_set_receive_original_destination(int fd, int family);
/// recvmmsg(2) with MSG_DONTWAIT into up to `count` (at most 256) slots of `size` bytes each at
/// `buffers`: slot i gets its sender in senders[i], its length in lengths[i], whether the kernel cut
/// it short (MSG_TRUNC) in truncated[i], and its destination from an IP_ORIGDSTADDR/IPV6_ORIGDSTADDR
/// control message in destinations[i] (ss_family 0 without one). Returns how many slots were
/// filled, or -1 with errno set (EAGAIN: nothing waiting).
int atsgate_receive_datagrams(int fd, unsigned char *buffers, size_t size, unsigned int count,
                              struct sockaddr_storage *senders, struct sockaddr_storage *destinations,
                              size_t *lengths, int *truncated);
#endif

#ifndef ATSGATE_SHIMS_H
#define ATSGATE_SHIMS_H
// GNU calls and macros Swift cannot import directly: splice(2), pipe2(2), accept4(2), recvmmsg(2) and
// the CPU_* macros of sched_getaffinity(2) need _GNU_SOURCE, netfilter's socket options live in
// kernel headers that clash with glibc's,
// and Glibc's Swift module does not export <sys/epoll.h>. Variadic ioctl(2), the CMSG_* macros of
// SCM_RIGHTS messages and posix_spawn's file actions are wrapped here too.
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

/// socketpair(2) AF_UNIX SOCK_SEQPACKET | SOCK_CLOEXEC, blocking: each send is one message, kept whole
/// with the descriptors it carries.
int atsgate_seqpacket_pair(int fds[2]);
/// socket(2) AF_UNIX SOCK_SEQPACKET | SOCK_CLOEXEC, blocking.
int atsgate_seqpacket_socket(void);
/// accept4(2) with SOCK_CLOEXEC only (blocking stays as the listener's).
int atsgate_accept_cloexec(int fd);
/// getsockopt(SO_PEERCRED) of a connected Unix socket (struct ucred needs _GNU_SOURCE).
int atsgate_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);
/// sendmsg(2) of `length` bytes with `count` descriptors in one SCM_RIGHTS message (none when 0),
/// MSG_NOSIGNAL; returns bytes sent or -1 with errno set.
ssize_t atsgate_send_descriptors(int socket, const void *bytes, size_t length, const int *fds, int count);
/// recvmsg(2) with MSG_CMSG_CLOEXEC: up to `capacity` descriptors into `fds` (how many in `*count`)
/// and the message's flags (MSG_TRUNC, MSG_CTRUNC) in `*flags`; returns bytes read or -1 with errno.
ssize_t atsgate_receive_descriptors(int socket, void *bytes, size_t length, int *fds, int capacity,
                                    int *count, int *flags);
/// The most descriptors one SCM_RIGHTS message carries (the kernel's SCM_MAX_FD).
#define ATSGATE_MAX_PASSED_DESCRIPTORS 253
/// ioctl(FIONREAD): bytes waiting to be read in a pipe or socket; -1 with errno set.
int atsgate_readable_bytes(int fd);
/// posix_spawn(3) of `path` with a clean signal state (every signal default, none blocked) and only
/// descriptors 0-2 plus `inherited[i]` as 3 + i; every other descriptor is closed in the child.
/// Returns 0 and the child's PID, or an errno value (ENOENT, EACCES, ENOEXEC ... of the exec itself).
int atsgate_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                  const int *inherited, int count);
/// pidfd_open(2): a descriptor that becomes readable when the process exits; close-on-exec.
int atsgate_pidfd_open(pid_t pid);
/// pidfd_send_signal(2): a signal to exactly that process, never to one that reused its PID.
int atsgate_pidfd_send_signal(int pidfd, int signal);
#endif

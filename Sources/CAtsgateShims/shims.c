#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <string.h>
#include <netinet/in.h>
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

/* From <linux/netfilter_ipv4.h> and <linux/netfilter_ipv6/ip6_tables.h>, which cannot be included
   beside glibc's <netinet/in.h>: the kernel ABI fixes both at 80. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

int atsgate_original_destination(int fd, struct sockaddr_storage *address) {
    struct sockaddr_storage local;
    socklen_t length = sizeof local;
    if (getsockname(fd, (struct sockaddr *)&local, &length) != 0) return -1;
    memset(address, 0, sizeof *address);
    length = sizeof *address;
    if (local.ss_family == AF_INET6) {
        return getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, address, &length);
    }
    return getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, address, &length);
}

int atsgate_set_transparent(int fd, int family) {
    int one = 1;
    if (family == AF_INET6) return setsockopt(fd, SOL_IPV6, IPV6_TRANSPARENT, &one, sizeof one);
    return setsockopt(fd, SOL_IP, IP_TRANSPARENT, &one, sizeof one);
}

int atsgate_set_receive_original_destination(int fd, int family) {
    int one = 1;
    if (family == AF_INET6) return setsockopt(fd, SOL_IPV6, IPV6_RECVORIGDSTADDR, &one, sizeof one);
    return setsockopt(fd, SOL_IP, IP_RECVORIGDSTADDR, &one, sizeof one);
}

#define ATSGATE_MAX_BATCH 256
/* Room for one IP_ORIGDSTADDR or IPV6_ORIGDSTADDR message, and a little more. */
#define ATSGATE_CONTROL_SIZE 128

int atsgate_receive_datagrams(int fd, unsigned char *buffers, size_t size, unsigned int count,
                              struct sockaddr_storage *senders, struct sockaddr_storage *destinations,
                              size_t *lengths, int *truncated) {
    struct mmsghdr messages[ATSGATE_MAX_BATCH];
    struct iovec vectors[ATSGATE_MAX_BATCH];
    static __thread unsigned char control[ATSGATE_MAX_BATCH][ATSGATE_CONTROL_SIZE];
    if (count > ATSGATE_MAX_BATCH) count = ATSGATE_MAX_BATCH;
    memset(messages, 0, count * sizeof messages[0]);
    for (unsigned int i = 0; i < count; i++) {
        vectors[i].iov_base = buffers + i * size;
        vectors[i].iov_len = size;
        messages[i].msg_hdr.msg_iov = &vectors[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_name = &senders[i];
        messages[i].msg_hdr.msg_namelen = sizeof senders[i];
        messages[i].msg_hdr.msg_control = control[i];
        messages[i].msg_hdr.msg_controllen = ATSGATE_CONTROL_SIZE;
    }
    int received = recvmmsg(fd, messages, count, MSG_DONTWAIT, NULL);
    if (received < 0) return -1;
    for (int i = 0; i < received; i++) {
        lengths[i] = messages[i].msg_len;
        truncated[i] = (messages[i].msg_hdr.msg_flags & MSG_TRUNC) != 0;
        destinations[i].ss_family = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&messages[i].msg_hdr); c != NULL; c = CMSG_NXTHDR(&messages[i].msg_hdr, c)) {
            if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_ORIGDSTADDR)
                || (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_ORIGDSTADDR)) {
                size_t length = c->cmsg_len - CMSG_LEN(0);
                if (length > sizeof destinations[i]) length = sizeof destinations[i];
                memcpy(&destinations[i], CMSG_DATA(c), length);
            }
        }
    }
    return received;
}

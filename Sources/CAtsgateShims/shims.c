#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
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

int atsgate_seqpacket_pair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

int atsgate_seqpacket_socket(void) {
    return socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
}

int atsgate_accept_cloexec(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
}

int atsgate_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

ssize_t atsgate_send_descriptors(int socket, const void *bytes, size_t length, const int *fds, int count) {
    if (count < 0 || count > ATSGATE_MAX_PASSED_DESCRIPTORS) {
        errno = EINVAL;
        return -1;
    }
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int) * ATSGATE_MAX_PASSED_DESCRIPTORS)];
    } control;
    memset(&control, 0, sizeof(control));
    struct iovec vector = { .iov_base = (void *)bytes, .iov_len = length };
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1 };
    if (count > 0) {
        message.msg_control = control.space;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * count);
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * count);
        memcpy(CMSG_DATA(header), fds, sizeof(int) * count);
    }
    return sendmsg(socket, &message, MSG_NOSIGNAL);
}

ssize_t atsgate_receive_descriptors(int socket, void *bytes, size_t length, int *fds, int capacity,
                                    int *count, int *flags) {
    *count = 0;
    *flags = 0;
    if (capacity < 0 || capacity > ATSGATE_MAX_PASSED_DESCRIPTORS) {
        errno = EINVAL;
        return -1;
    }
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int) * ATSGATE_MAX_PASSED_DESCRIPTORS)];
    } control;
    memset(&control, 0, sizeof(control));
    struct iovec vector = { .iov_base = bytes, .iov_len = length };
    struct msghdr message = { .msg_iov = &vector, .msg_iovlen = 1 };
    if (capacity > 0) {
        message.msg_control = control.space;
        // Room for `capacity` only: more descriptors than that end the message with MSG_CTRUNC.
        message.msg_controllen = CMSG_SPACE(sizeof(int) * capacity);
    }
    ssize_t received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    if (received < 0) return -1;
    *flags = message.msg_flags;
    // Every SCM_RIGHTS header, in order: the kernel may split what one send carried.
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t carried = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t index = 0; index < carried; index++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + index * sizeof(int), sizeof(int));
            if (*count < capacity) {
                fds[(*count)++] = fd;
            } else {
                close(fd);
                *flags |= MSG_CTRUNC;
            }
        }
    }
    return received;
}

int atsgate_readable_bytes(int fd) {
    int count = 0;
    if (ioctl(fd, FIONREAD, &count) != 0) return -1;
    return count;
}

int atsgate_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                  const int *inherited, int count) {
    if (count < 0) return EINVAL;
    int target = 3;
    // Each inherited descriptor is first copied above the range it goes to, so that moving one to
    // 3 + i can never overwrite another still to be moved; closefrom then closes the copies.
    int copies[count > 0 ? count : 1];
    int made = 0;
    int result = 0;
    for (; made < count; made++) {
        copies[made] = fcntl(inherited[made], F_DUPFD_CLOEXEC, target + count);
        if (copies[made] < 0) {
            result = errno;
            break;
        }
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int actionsMade = 0, attributesMade = 0;
    if (result == 0) result = posix_spawn_file_actions_init(&actions);
    if (result == 0) actionsMade = 1;
    for (int index = 0; result == 0 && index < count; index++) {
        result = posix_spawn_file_actions_adddup2(&actions, copies[index], target + index);
    }
    if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, target + count);
    if (result == 0) result = posix_spawnattr_init(&attributes);
    if (result == 0) attributesMade = 1;
    if (result == 0) {
        // The parent ignores the signals it handles through Dispatch, and ignored dispositions
        // survive exec: the child starts with every signal at its default and none blocked.
        sigset_t all, none;
        sigfillset(&all);
        sigemptyset(&none);
        result = posix_spawnattr_setsigdefault(&attributes, &all);
        if (result == 0) result = posix_spawnattr_setsigmask(&attributes, &none);
        if (result == 0) result = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    }
    if (result == 0) result = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    if (attributesMade) posix_spawnattr_destroy(&attributes);
    if (actionsMade) posix_spawn_file_actions_destroy(&actions);
    for (int index = 0; index < made; index++) close(copies[index]);
    return result;
}

int atsgate_pidfd_open(pid_t pid) {
    return pidfd_open(pid, 0);
}

int atsgate_pidfd_send_signal(int pidfd, int signal) {
    return pidfd_send_signal(pidfd, signal, NULL, 0);
}

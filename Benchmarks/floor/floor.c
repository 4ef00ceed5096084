// floor: the least a CONNECT proxy can do on this machine, the floor column of the proxy benchmark
// (Benchmarks/README.md). Accept, read the CONNECT head, connect, answer 200, relay both ways with
// splice and half-close. No policy, no log, no forward proxying (any other method gets 405).
// Build: gcc -O2 -pthread -o floor floor.c
//
//   floor --listen 127.0.0.1:PORT [--threads N]
//
// One thread per core (default: the online cores), each with its own SO_REUSEPORT listener and its own
// level-triggered epoll set, so threads share nothing and the kernel spreads the connections.
//
// Relay: a direction splices socket -> pipe -> socket. Pipes come from a per-thread pool of empty
// ones: a direction takes one when it has bytes to move and gives it back once it is empty again, so
// an idle tunnel costs two sockets and the struct below, and a busy thread makes no pipe2 calls. A
// splice from the socket that moved less than 16 KiB took what there was: the next read waits for epoll
// rather than paying for a splice that says EAGAIN (level-triggered epoll reports what is left). The target must be a numeric address (the benchmark's origin is 127.0.0.1): resolving a
// name would block the thread.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX 2048
#define SPLICE_CHUNK (1 << 20)
#define SHORT_READ (16 * 1024)
#define POOL_MAX 256

enum phase { READING_HEAD, CONNECTING, RELAYING };

struct conn;
// What epoll hands back: one per socket, so a readiness event names the side it is for.
struct side {
    struct conn *conn;
    int fd;
    unsigned interest; // EPOLLIN / EPOLLOUT as registered now
};

// One direction of the relay: bytes read from `from` and written to the other side.
struct flow {
    int pipe_r, pipe_w; // a pipe owned while bytes wait in it (-1 otherwise)
    size_t pending;     // bytes in that pipe not yet written
    int eof;            // the source said EOF and everything was written: the destination was shut for writing
    int drained;        // the last read was short: wait for epoll before reading again
};

struct conn {
    enum phase phase;
    struct side client, upstream;
    struct flow up, down; // up: client -> upstream, down: upstream -> client
    char *head;           // the CONNECT head while it is read, freed once answered
    size_t head_len;
    struct conn *next_dead; // closed in this epoll batch; freed after it (a later event may name it)
    int dead;
};

struct worker {
    int epfd, listen_fd;
    int pool[POOL_MAX][2]; // empty pipes
    int pooled;
    struct conn *dead; // freed at the end of the batch
};

static __thread struct worker *self;

static struct sockaddr_in listen_addr;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void set_interest(struct worker *w, struct side *s, unsigned interest) {
    if (s->interest == interest) return;
    struct epoll_event ev = {.events = interest, .data.ptr = s};
    epoll_ctl(w->epfd, EPOLL_CTL_MOD, s->fd, &ev);
    s->interest = interest;
}

static void add(struct worker *w, struct side *s, unsigned interest) {
    struct epoll_event ev = {.events = interest, .data.ptr = s};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->fd, &ev) != 0) die("epoll_ctl");
    s->interest = interest;
}

static int take_pipe(struct worker *w, struct flow *f) {
    if (w->pooled > 0) {
        w->pooled--;
        f->pipe_r = w->pool[w->pooled][0];
        f->pipe_w = w->pool[w->pooled][1];
        return 0;
    }
    int p[2];
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
    f->pipe_r = p[0];
    f->pipe_w = p[1];
    return 0;
}

// An empty pipe goes back to the pool; one with bytes in it (a tunnel torn down) is closed.
static void release_pipe(struct worker *w, struct flow *f) {
    if (f->pipe_r < 0) return;
    if (f->pending == 0 && w->pooled < POOL_MAX) {
        w->pool[w->pooled][0] = f->pipe_r;
        w->pool[w->pooled][1] = f->pipe_w;
        w->pooled++;
    } else {
        close(f->pipe_r);
        close(f->pipe_w);
    }
    f->pipe_r = f->pipe_w = -1;
    f->pending = 0;
}

static void destroy(struct conn *c) {
    // close() removes the descriptors from the epoll set.
    if (c->client.fd >= 0) close(c->client.fd);
    if (c->upstream.fd >= 0) close(c->upstream.fd);
    release_pipe(self, &c->up);
    release_pipe(self, &c->down);
    free(c->head);
    c->head = NULL;
    c->dead = 1;
    c->next_dead = self->dead;
    self->dead = c;
}

// Moves what the source has into the destination. Returns -1 when the tunnel is to be torn down.
static int pump(struct worker *w, struct flow *f, int from, int to) {
    for (;;) {
        if (f->pending > 0) {
            ssize_t n = splice(f->pipe_r, NULL, to, NULL, f->pending, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n < 0) return (errno == EAGAIN) ? 0 : -1;
            f->pending -= (size_t)n;
            if (f->pending > 0) return 0;
            if (f->drained) return 0;
        }
        if (f->eof) return 0;
        if (f->pipe_r < 0 && take_pipe(w, f) != 0) return -1;
        ssize_t n = splice(from, NULL, f->pipe_w, NULL, SPLICE_CHUNK, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n == 0) { // EOF: pass the half-close on
            f->eof = 1;
            shutdown(to, SHUT_WR);
            return 0;
        }
        if (n < 0) return (errno == EAGAIN) ? 0 : -1;
        f->pending = (size_t)n;
        f->drained = n < SHORT_READ;
    }
}

// Interest follows the flows: read a side while its flow has nothing waiting; write a side while the
// flow into it has bytes waiting.
static void update_interest(struct worker *w, struct conn *c) {
    unsigned ci = 0, ui = 0;
    if (!c->up.eof && c->up.pending == 0) ci |= EPOLLIN;
    if (c->up.pending > 0) ui |= EPOLLOUT;
    if (!c->down.eof && c->down.pending == 0) ui |= EPOLLIN;
    if (c->down.pending > 0) ci |= EPOLLOUT;
    set_interest(w, &c->client, ci);
    set_interest(w, &c->upstream, ui);
}

// Readiness of one side moves the flow out of it (readable) or into it (writable).
static void relay(struct worker *w, struct conn *c, struct side *s, unsigned events) {
    struct flow *out = s == &c->client ? &c->up : &c->down, *in = s == &c->client ? &c->down : &c->up;
    struct side *other = s == &c->client ? &c->upstream : &c->client;
    if (((events & (EPOLLIN | EPOLLHUP)) && pump(w, out, s->fd, other->fd) < 0) ||
        ((events & EPOLLOUT) && pump(w, in, other->fd, s->fd) < 0)) {
        destroy(c);
        return;
    }
    if (c->up.eof && c->down.eof && c->up.pending == 0 && c->down.pending == 0) {
        destroy(c);
        return;
    }
    // An empty pipe goes back to the pool: an idle tunnel holds none.
    if (c->up.pending == 0) release_pipe(w, &c->up);
    if (c->down.pending == 0) release_pipe(w, &c->down);
    update_interest(w, c);
}

static void answer_and_close(struct conn *c, const char *status) {
    char buf[128];
    int n = snprintf(buf, sizeof buf, "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);
    (void)!send(c->client.fd, buf, (size_t)n, MSG_NOSIGNAL);
    destroy(c);
}

// The client sent something: parse the CONNECT head once it is complete and start the connect.
static void read_head(struct worker *w, struct conn *c) {
    ssize_t n = recv(c->client.fd, c->head + c->head_len, HEAD_MAX - 1 - c->head_len, 0);
    if (n <= 0) {
        if (n < 0 && errno == EAGAIN) return;
        destroy(c);
        return;
    }
    c->head_len += (size_t)n;
    c->head[c->head_len] = 0;
    char *end = strstr(c->head, "\r\n\r\n");
    if (!end) {
        if (c->head_len >= HEAD_MAX - 1) answer_and_close(c, "431 Request Header Fields Too Large");
        return;
    }
    char host[256];
    unsigned port = 0;
    if (sscanf(c->head, "CONNECT %255[^: ]:%u HTTP/1.", host, &port) != 2 || port == 0 || port > 65535) {
        answer_and_close(c, strncmp(c->head, "CONNECT ", 8) ? "405 Method Not Allowed" : "400 Bad Request");
        return;
    }
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &to.sin_addr) != 1) {
        answer_and_close(c, "400 Bad Request");
        return;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        answer_and_close(c, "503 Service Unavailable");
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0 && errno != EINPROGRESS) {
        close(fd);
        answer_and_close(c, "502 Bad Gateway");
        return;
    }
    c->upstream.fd = fd;
    c->phase = CONNECTING;
    set_interest(w, &c->client, 0);
    add(w, &c->upstream, EPOLLOUT);
}

static void connected(struct worker *w, struct conn *c) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->upstream.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
        answer_and_close(c, "502 Bad Gateway");
        return;
    }
    static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (send(c->client.fd, ok, sizeof ok - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof ok - 1)) {
        destroy(c);
        return;
    }
    // Bytes the client sent after the head are tunnel data.
    char *end = strstr(c->head, "\r\n\r\n") + 4;
    size_t extra = c->head_len - (size_t)(end - c->head);
    if (extra > 0 && send(c->upstream.fd, end, extra, MSG_NOSIGNAL) != (ssize_t)extra) {
        destroy(c);
        return;
    }
    free(c->head);
    c->head = NULL;
    c->phase = RELAYING;
    update_interest(w, c);
}

static void accept_all(struct worker *w) {
    for (;;) {
        int fd = accept4(w->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return; // EAGAIN, or out of descriptors: the next event retries
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = calloc(1, sizeof *c);
        char *head = malloc(HEAD_MAX);
        if (!c || !head) {
            free(c);
            free(head);
            close(fd);
            continue;
        }
        c->head = head;
        c->client = (struct side){.conn = c, .fd = fd};
        c->upstream = (struct side){.conn = c, .fd = -1};
        c->up = c->down = (struct flow){.pipe_r = -1, .pipe_w = -1};
        add(w, &c->client, EPOLLIN);
    }
}

static void *run(void *arg) {
    struct worker *w = arg;
    self = w;
    struct epoll_event events[256];
    for (;;) {
        int n = epoll_wait(w->epfd, events, 256, -1);
        for (int i = 0; i < n; i++) {
            struct side *s = events[i].data.ptr;
            if (s == NULL) {
                accept_all(w);
                continue;
            }
            struct conn *c = s->conn;
            if (c->dead) continue;
            // An error, or a hang-up on a side nothing is waited for on any more: the tunnel is over.
            if (c->phase == RELAYING && ((events[i].events & EPOLLERR) || ((events[i].events & EPOLLHUP) && s->interest == 0))) {
                destroy(c);
                continue;
            }
            switch (c->phase) {
            case READING_HEAD: read_head(w, c); break;
            case CONNECTING: connected(w, c); break;
            case RELAYING: relay(w, c, s, events[i].events); break;
            }
        }
        while (w->dead) {
            struct conn *c = w->dead;
            w->dead = c->next_dead;
            free(c);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *listen_at = NULL;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--listen") && i + 1 < argc) listen_at = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: floor --listen HOST:PORT [--threads N]\n");
            return 2;
        }
    }
    char host[64];
    unsigned port;
    if (!listen_at || sscanf(listen_at, "%63[^:]:%u", host, &port) != 2 || threads < 1) {
        fprintf(stderr, "usage: floor --listen HOST:PORT [--threads N]\n");
        return 2;
    }
    listen_addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &listen_addr.sin_addr) != 1) die("--listen needs a numeric IPv4 address");
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    pthread_t tids[64];
    if (threads > 64) threads = 64;
    for (long t = 0; t < threads; t++) {
        struct worker *w = calloc(1, sizeof *w);
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        w->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        setsockopt(w->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(w->listen_fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        if (bind(w->listen_fd, (struct sockaddr *)&listen_addr, sizeof listen_addr) != 0) die("bind");
        if (listen(w->listen_fd, 4096) != 0) die("listen");
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd, &ev);
        if (pthread_create(&tids[t], NULL, run, w) != 0) die("pthread_create");
    }
    for (long t = 0; t < threads; t++) pthread_join(tids[t], NULL);
    return 0;
}

// loadgen: the load generator behind scripts/benchmark. Loopback benchmarking of HTTP CONNECT proxies.
// Build: gcc -O2 -pthread -o loadgen loadgen.c -lssl -lcrypto
//
//   loadgen tunnels --proxy H:P --target H:P [--direct] [--threads 8] [--duration 10] [--path /small]
//       Each thread, until the time is up: connect to the proxy, CONNECT target, read the 200 head,
//       GET path with Connection: close, read to EOF, close. Counts completed tunnels per second and
//       the latency of each (connect .. EOF) for p50/p90/p99. --direct skips the CONNECT step (then
//       --proxy is the origin itself).
//   loadgen tls --proxy H:P [--target H:P] [--direct] [--tls-max 1.3|1.2] [--threads 8] [--duration 10]
//       Like tunnels, with TLS inside the tunnel: connect, CONNECT target (default 127.0.0.1:18443),
//       read the 200 head, a full TLS handshake (a new session every time, no certificate verification,
//       no SNI: the target is an IP), GET path with Connection: close over TLS, read to EOF, close.
//       Offers TLS 1.2 and 1.3 (--tls-max 1.2: 1.2 only). Latency is connect .. EOF. Also prints how
//       many handshakes negotiated each version (negotiated_tls13=, negotiated_tls12=) and the cipher
//       of the first (cipher=).
//   loadgen bulk --proxy H:P --target H:P [--direct] [--streams 1] [--duration 10] [--path /big]
//       Each stream, until the time is up: CONNECT, GET path, read to EOF with 256 KiB reads, repeat.
//       Reports MB/s (10^6 bytes) over all streams.
//   loadgen idle --proxy H:P --target H:P [--count 1500] [--threads 4] [--hold 600]
//       Opens COUNT CONNECT tunnels and holds them. Prints a line starting with "ready" once all
//       attempts are done, then waits for SIGUSR1, SIGTERM, SIGINT, a line or EOF on stdin when
//       --stdin is given, or --hold seconds, checks how many tunnels the proxy dropped meanwhile,
//       closes them and prints the final line. After 3 failures in a row (a proxy at its limit) or
//       120 s it stops opening and reports the rest as skipped=.
//
//   loadgen quic --proxy H:P --file FILE [--duration 10] [--rate N]
//       Sends the UDP datagrams of FILE (each a 2-byte big-endian length, then the bytes: QUIC Initials
//       QUICInitialBenchmark --write makes) to H:P in turn, 64 per sendmmsg, until the time is up, and
//       prints how many it sent (scripts/benchmark-gateway: the QUIC listener's Initials per second).
//
// tunnels and tls take --rate N: exchanges started per second over all threads, evenly spaced (a
// fixed rate, to compare the CPU two ways of proxying cost at the same load); default as fast as
// the threads go.
//
// Every mode that sends a CONNECT also takes --proxy-header 'NAME: VALUE' (repeatable): fields added
// to each CONNECT, e.g. Proxy-Authorization and User-Agent (scripts/benchmark-lab), and
// --target-names N: a target with "%d" in it (n%d.bench.test:8080) names N hosts, 0..N-1, each tunnel
// the next one in turn (scripts/benchmark-dns).
//
// tunnels and bulk take --proxy-tls: TLS to the proxy itself (a proxy's TLS listener, Squid's
// https_port), a full handshake per connection (no session resumption, no certificate verification,
// as the tls mode's inner handshake), then CONNECT and everything after it inside that TLS. A failed
// handshake with the proxy counts as err_tls.
//
// Output: one line of key=value pairs on stdout per result (parsed by scripts/benchmark); the first
// few failures of each kind are described on stderr. Every failure is counted: err_connect (connect()
// to the proxy failed), err_proxy (CONNECT answered with something else than 2xx, or the proxy closed
// before answering), err_http (the GET was answered with something else than 200), err_short (EOF
// before Content-Length bytes of body), err_io (other read/write errors), err_timeout (10 s without
// progress), and in tls mode err_tls (the handshake failed: an alert, a protocol error, or the peer
// closed during it; also a TLS error while reading the response). errors= is their sum. The exit status is 0 when the run completed, whatever the errors,
// and 2 on a usage error.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

enum { E_CONNECT, E_PROXY, E_HTTP, E_SHORT, E_IO, E_TIMEOUT, E_TLS, E_COUNT };
static const char *err_names[E_COUNT] = {"err_connect", "err_proxy", "err_http", "err_short", "err_io", "err_timeout",
                                         "err_tls"};
// Error kinds on the result line: err_tls only in tls mode, so the other modes print what they always did.
static int err_kinds_printed = E_TLS;
static atomic_long err_reported[E_COUNT];
#define MAX_REPORTED_PER_KIND 3
static int io_timeout_s = 10; // seconds without progress before a read/write/connect counts as timed out

static struct sockaddr_in proxy_addr;
static char target[256] = "127.0.0.1:18080";
/* --target-names: how many names "%d" in the target stands for (0: the target as given). */
static long target_names = 0;
static atomic_long target_seq;
/* The target of the tunnel this thread is making (the target, or its "%d" filled in). */
static __thread char tunnel_target[300];

static void next_target(void) {
    const char *mark = target_names > 0 ? strstr(target, "%d") : NULL;
    if (!mark) {
        snprintf(tunnel_target, sizeof tunnel_target, "%s", target);
        return;
    }
    long n = atomic_fetch_add(&target_seq, 1) % target_names;
    snprintf(tunnel_target, sizeof tunnel_target, "%.*s%ld%s", (int)(mark - target), target, n, mark + 2);
}
/* --proxy-header lines, each ending in CRLF, sent with every CONNECT. */
static char proxy_headers[2048] = "";
static const char *path = NULL;
static int direct = 0;
static double duration = 10.0;
static int threads = 0;
static long count = 1500;
static double hold = 600.0;
static int use_stdin = 0;
static int tls_max_version = TLS1_3_VERSION;
static int proxy_tls = 0;
/* --rate: exchanges started per second over all threads (0: as fast as they go); the schedule's start. */
static double rate = 0;
static double rate_start = 0;
static atomic_long rate_seq;
static const char *datagram_file = NULL;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(int kind, const char *fmt, ...) {
    if (atomic_fetch_add(&err_reported[kind], 1) >= MAX_REPORTED_PER_KIND) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "loadgen: %s: %s\n", err_names[kind], line);
}

static int classify_errno(int e) { return (e == EAGAIN || e == EWOULDBLOCK) ? E_TIMEOUT : E_IO; }

// Connects to the proxy (or the origin in direct mode). Returns the fd or -1 (error counted by caller).
static int open_conn(int *kind) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *kind = E_CONNECT;
        report(E_CONNECT, "socket: %s", strerror(errno));
        return -1;
    }
    struct timeval tv = {io_timeout_s, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&proxy_addr, sizeof proxy_addr) != 0) {
        *kind = (errno == EINPROGRESS || errno == ETIMEDOUT) ? E_TIMEOUT : E_CONNECT;
        report(*kind, "connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int tls_failure(SSL *ssl, int rc, const char *during);

// A connection to the proxy: its socket, and the TLS session over it with --proxy-tls.
typedef struct {
    int fd;
    SSL *ssl;
} conn_t;

static int write_all(int fd, const char *p, size_t n, int *kind);

static int conn_send(conn_t *c, const char *p, size_t n, int *kind) {
    if (!c->ssl) return write_all(c->fd, p, n, kind);
    while (n > 0) {
        size_t w = 0;
        int rc = SSL_write_ex(c->ssl, p, n, &w);
        if (rc != 1) {
            *kind = tls_failure(c->ssl, rc, "writing to the proxy over TLS");
            return -1;
        }
        p += w;
        n -= w;
    }
    return 0;
}

// Bytes read (> 0), 0 at the end of the stream (EOF, or close_notify), -1 on an error (*kind set and
// reported, `during` saying what was being read).
static ssize_t conn_recv(conn_t *c, char *buf, size_t size, int *kind, const char *during) {
    if (!c->ssl) {
        for (;;) {
            ssize_t n = recv(c->fd, buf, size, 0);
            if (n >= 0) return n;
            if (errno == EINTR) continue;
            *kind = classify_errno(errno);
            report(*kind, "%s: %s", during, strerror(errno));
            return -1;
        }
    }
    size_t n = 0;
    int rc = SSL_read_ex(c->ssl, buf, size, &n);
    if (rc == 1) return (ssize_t)n;
    if (SSL_get_error(c->ssl, rc) == SSL_ERROR_ZERO_RETURN) return 0; // close_notify, or EOF (tls_client_ctx)
    *kind = tls_failure(c->ssl, rc, during);
    return -1;
}

static void conn_close(conn_t *c) {
    if (c->ssl) SSL_free(c->ssl);
    close(c->fd);
}

static int write_all(int fd, const char *p, size_t n, int *kind) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            *kind = classify_errno(errno);
            report(*kind, "write: %s", strerror(errno));
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

// Incremental parse of an HTTP response: status, Content-Length, body bytes.
typedef struct {
    char head[8192];
    size_t head_len;
    int head_done;
    int status;
    long long content_length; // -1 when absent
    long long body;
} resp_t;

static void resp_init(resp_t *r) {
    r->head_len = 0;
    r->head_done = 0;
    r->status = 0;
    r->content_length = -1;
    r->body = 0;
}

static void resp_parse_head(resp_t *r, size_t end) {
    r->head[end] = 0;
    if (strncmp(r->head, "HTTP/1.", 7) == 0 && r->head_len >= 12) r->status = atoi(r->head + 9);
    for (char *line = strstr(r->head, "\r\n"); line && line < r->head + end; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "Content-Length:", 15) == 0) r->content_length = atoll(line + 17);
    }
}

// Feeds n bytes. Returns the number of bytes consumed into the head or body (always n) and sets
// *extra to the count of bytes after the head when stop_at_head is set (they belong to what follows).
static size_t resp_feed(resp_t *r, const char *p, size_t n, int stop_at_head, size_t *extra) {
    *extra = 0;
    if (r->head_done) {
        r->body += (long long)n;
        return n;
    }
    size_t room = sizeof r->head - 1 - r->head_len;
    size_t take = n < room ? n : room;
    size_t old = r->head_len;
    memcpy(r->head + old, p, take);
    r->head_len += take;
    r->head[r->head_len] = 0;
    size_t from = old >= 3 ? old - 3 : 0;
    char *end = memmem(r->head + from, r->head_len - from, "\r\n\r\n", 4);
    if (!end) {
        if (take < n) r->head_done = -1; // head too large: treated as a protocol error by callers
        return n;
    }
    size_t head_end = (size_t)(end - r->head) + 4;
    size_t after = r->head_len - head_end + (n - take);
    resp_parse_head(r, head_end);
    r->head_done = 1;
    r->head_len = head_end;
    if (stop_at_head) *extra = after;
    else r->body += (long long)after;
    return n;
}

// Reads the CONNECT answer head. Bytes read past it are copied to spill (size *spill_len).
static int read_connect_head(conn_t *c, char *spill, size_t *spill_len, int *kind) {
    resp_t r;
    resp_init(&r);
    char buf[4096];
    if (spill_len) *spill_len = 0;
    while (r.head_done == 0) {
        ssize_t n = conn_recv(c, buf, sizeof buf, kind, "reading CONNECT answer");
        if (n < 0) return -1;
        if (n == 0) {
            *kind = E_PROXY;
            report(E_PROXY, "proxy closed the connection before answering CONNECT");
            return -1;
        }
        size_t extra;
        resp_feed(&r, buf, (size_t)n, 1, &extra);
        if (r.head_done == 1 && extra > 0) {
            if (!spill) {
                *kind = E_PROXY;
                report(E_PROXY, "%zu unexpected bytes after the CONNECT answer", extra);
                return -1;
            }
            memcpy(spill, buf + n - extra, extra);
            *spill_len = extra;
        }
    }
    if (r.head_done < 0 || r.status < 200 || r.status > 299) {
        *kind = E_PROXY;
        char *eol = strstr(r.head, "\r\n");
        if (eol) *eol = 0;
        report(E_PROXY, "CONNECT answered: %.120s", r.head);
        return -1;
    }
    return 0;
}

static int send_connect(conn_t *c, int *kind) {
    char req[3000];
    next_target();
    int n = snprintf(req, sizeof req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", tunnel_target, tunnel_target,
                     proxy_headers);
    return conn_send(c, req, (size_t)n, kind);
}

static int format_get(char *req, size_t size) {
    char host[300];
    if (!tunnel_target[0]) next_target(); // direct mode: no CONNECT chose one
    snprintf(host, sizeof host, "%s", tunnel_target);
    char *colon = strrchr(host, ':');
    if (colon) *colon = 0;
    return snprintf(req, size, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host);
}

static int send_get(conn_t *c, int *kind) {
    char req[600];
    int n = format_get(req, sizeof req);
    return conn_send(c, req, (size_t)n, kind);
}

// The verdict on a response read to EOF: 0 when complete, -1 (and *kind) otherwise.
static int check_response(resp_t *r, int *kind) {
    if (r->head_done != 1) {
        *kind = E_HTTP;
        report(E_HTTP, "connection closed without a complete response head (%zu bytes)", r->head_len);
        return -1;
    }
    if (r->status != 200) {
        *kind = E_HTTP;
        char *eol = strstr(r->head, "\r\n");
        if (eol) *eol = 0;
        report(E_HTTP, "GET answered: %.120s", r->head);
        return -1;
    }
    if (r->content_length >= 0 && r->body != r->content_length) {
        *kind = E_SHORT;
        report(E_SHORT, "body of %lld bytes, Content-Length %lld", r->body, r->content_length);
        return -1;
    }
    return 0;
}

// Reads the GET response to EOF (or until deadline > 0 passes). Returns 0 when complete, 1 when cut by
// the deadline, -1 on error. *bytes gets every byte read (head and body).
static int read_response(conn_t *c, char *buf, size_t bufsize, const char *spill, size_t spill_len, double deadline,
                         long long *bytes, int *kind) {
    resp_t r;
    resp_init(&r);
    size_t extra;
    *bytes = (long long)spill_len;
    if (spill_len) resp_feed(&r, spill, spill_len, 0, &extra);
    for (;;) {
        ssize_t n = conn_recv(c, buf, bufsize, kind, "reading response");
        if (n < 0) return -1;
        if (n == 0) break;
        *bytes += n;
        resp_feed(&r, buf, (size_t)n, 0, &extra);
        if (deadline > 0 && now_s() >= deadline) return 1;
    }
    return check_response(&r, kind);
}

// ---- tunnels ----

typedef struct {
    pthread_t tid;
    pthread_barrier_t *barrier;
    double *start;
    uint32_t *lat_us;
    size_t lat_len, lat_cap;
    long long bytes;
    long completed;
    long errors[E_COUNT];
    long negotiated_tls12, negotiated_tls13;
    const char *cipher; // of the first handshake (a static OpenSSL name)
    SSL_CTX *tls_ctx;
    double end;
} worker_t;

static void lat_push(worker_t *w, double seconds) {
    if (w->lat_len == w->lat_cap) {
        w->lat_cap = w->lat_cap ? w->lat_cap * 2 : 65536;
        w->lat_us = realloc(w->lat_us, w->lat_cap * sizeof *w->lat_us);
        if (!w->lat_us) {
            perror("loadgen: realloc");
            exit(1);
        }
    }
    double us = seconds * 1e6;
    w->lat_us[w->lat_len++] = us > 4e9 ? 4000000000u : (uint32_t)us;
}

// TLS with the proxy itself (--proxy-tls) over a connected socket; 0, or -1 with *kind set.
static int proxy_handshake(worker_t *w, conn_t *c, int *kind) {
    ERR_clear_error();
    c->ssl = SSL_new(w->tls_ctx);
    if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) {
        *kind = E_TLS;
        report(E_TLS, "SSL_new: %s", ERR_error_string(ERR_get_error(), NULL));
        ERR_clear_error();
        return -1;
    }
    int rc = SSL_connect(c->ssl);
    if (rc != 1) {
        *kind = tls_failure(c->ssl, rc, "TLS handshake with the proxy");
        return -1;
    }
    return 0;
}

// One tunnel (or one direct request). stream: bulk mode with deadline cut-off.
static int one_exchange(worker_t *w, char *buf, size_t bufsize, double deadline_cut) {
    int kind = E_IO;
    conn_t c = {open_conn(&kind), NULL};
    if (c.fd < 0) {
        w->errors[kind]++;
        return -1;
    }
    char spill[4096];
    size_t spill_len = 0;
    if (proxy_tls && proxy_handshake(w, &c, &kind) != 0) {
        conn_close(&c);
        w->errors[kind]++;
        return -1;
    }
    if (!direct) {
        if (send_connect(&c, &kind) != 0 || read_connect_head(&c, spill, &spill_len, &kind) != 0) {
            conn_close(&c);
            w->errors[kind]++;
            return -1;
        }
    }
    long long bytes = 0;
    int rc = send_get(&c, &kind);
    if (rc == 0) rc = read_response(&c, buf, bufsize, spill, spill_len, deadline_cut, &bytes, &kind);
    conn_close(&c);
    w->bytes += bytes;
    if (rc < 0) {
        w->errors[kind]++;
        return -1;
    }
    return rc;
}

static double deadline_global;

// One short exchange per iteration until the deadline, timing each: the tunnels and tls modes.
typedef int (*exchange_fn)(worker_t *w, char *buf, size_t bufsize);

static void *rate_loop(worker_t *w, exchange_fn exchange) {
    char buf[4096];
    pthread_barrier_wait(w->barrier);
    for (;;) {
        if (rate > 0) {
            double at = rate_start + (double)atomic_fetch_add(&rate_seq, 1) / rate;
            if (at >= deadline_global) break;
            double wait = at - now_s();
            if (wait > 0) usleep((useconds_t)(wait * 1e6));
        }
        double t0 = now_s();
        if (t0 >= deadline_global) break;
        if (exchange(w, buf, sizeof buf) == 0) {
            w->completed++;
            lat_push(w, now_s() - t0);
        } else {
            usleep(1000); // do not spin on a refusing proxy
        }
    }
    w->end = now_s();
    return NULL;
}

static int plain_exchange(worker_t *w, char *buf, size_t bufsize) { return one_exchange(w, buf, bufsize, 0); }

static void *tunnels_worker(void *arg) { return rate_loop(arg, plain_exchange); }

static void *bulk_worker(void *arg) {
    worker_t *w = arg;
    size_t bufsize = 256 * 1024;
    char *buf = malloc(bufsize);
    pthread_barrier_wait(w->barrier);
    while (now_s() < deadline_global) {
        int rc = one_exchange(w, buf, bufsize, deadline_global);
        if (rc == 0) w->completed++;
        else if (rc < 0) usleep(1000);
    }
    w->end = now_s();
    free(buf);
    return NULL;
}

// ---- TLS tunnels ----

// One context per thread: OpenSSL contexts are shareable, but their reference counts and locks would
// be contended by every handshake. No session cache and no tickets: every tunnel is a full handshake,
// as a client's first connection is.
static SSL_CTX *tls_client_ctx(void) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
        !SSL_CTX_set_max_proto_version(ctx, tls_max_version)) {
        fprintf(stderr, "loadgen: cannot create a TLS client context: %s\n", ERR_error_string(ERR_get_error(), NULL));
        exit(1);
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    // A server that closes after Connection: close without close_notify has still sent the whole response.
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF);
    return ctx;
}

// Counts and describes a failed SSL call (rc its return value, errno as it left it). With a blocking
// socket and SO_RCVTIMEO, OpenSSL reports a timed-out read as WANT_READ.
static int tls_failure(SSL *ssl, int rc, const char *during) {
    int saved_errno = errno;
    int e = SSL_get_error(ssl, rc);
    unsigned long code = ERR_peek_error();
    int kind;
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        kind = E_TIMEOUT;
        report(kind, "%s: no progress in %d s", during, io_timeout_s);
    } else if (e == SSL_ERROR_SYSCALL && code == 0) {
        if (saved_errno == 0) {
            kind = E_TLS;
            report(kind, "%s: the peer closed the connection", during);
        } else {
            kind = classify_errno(saved_errno);
            report(kind, "%s: %s", during, strerror(saved_errno));
        }
    } else if (e == SSL_ERROR_ZERO_RETURN) {
        kind = E_TLS;
        report(kind, "%s: the peer sent close_notify", during);
    } else {
        char text[256];
        ERR_error_string_n(code, text, sizeof text);
        kind = E_TLS;
        report(kind, "%s: %s", during, code ? text : "TLS error without a reason");
    }
    ERR_clear_error();
    return kind;
}

static int tls_read_response(SSL *ssl, char *buf, size_t bufsize, int *kind) {
    resp_t r;
    resp_init(&r);
    size_t extra;
    for (;;) {
        int n = SSL_read(ssl, buf, (int)bufsize);
        if (n > 0) {
            resp_feed(&r, buf, (size_t)n, 0, &extra);
            continue;
        }
        if (SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN) break; // close_notify, or EOF (see tls_client_ctx)
        *kind = tls_failure(ssl, n, "reading response over TLS");
        return -1;
    }
    return check_response(&r, kind);
}

// One tunnel with a TLS session inside (or one direct TLS request).
static int one_tls_exchange(worker_t *w, char *buf, size_t bufsize) {
    int kind = E_IO;
    int fd = open_conn(&kind);
    if (fd < 0) {
        w->errors[kind]++;
        return -1;
    }
    // Nothing may follow the CONNECT answer: the server speaks only after the ClientHello.
    conn_t plain = {fd, NULL};
    if (!direct && (send_connect(&plain, &kind) != 0 || read_connect_head(&plain, NULL, NULL, &kind) != 0)) {
        close(fd);
        w->errors[kind]++;
        return -1;
    }
    ERR_clear_error();
    SSL *ssl = SSL_new(w->tls_ctx);
    if (!ssl || !SSL_set_fd(ssl, fd)) {
        report(E_TLS, "SSL_new: %s", ERR_error_string(ERR_get_error(), NULL));
        ERR_clear_error();
        SSL_free(ssl);
        close(fd);
        w->errors[E_TLS]++;
        return -1;
    }
    int rc = SSL_connect(ssl);
    if (rc != 1) {
        kind = tls_failure(ssl, rc, "TLS handshake");
    } else {
        if (SSL_version(ssl) == TLS1_3_VERSION) w->negotiated_tls13++;
        else if (SSL_version(ssl) == TLS1_2_VERSION) w->negotiated_tls12++;
        if (!w->cipher) w->cipher = SSL_get_cipher_name(ssl);
        char req[600];
        int n = format_get(req, sizeof req);
        int wrote = SSL_write(ssl, req, n);
        if (wrote != n) {
            kind = tls_failure(ssl, wrote, "sending GET over TLS");
            rc = -1;
        } else {
            rc = tls_read_response(ssl, buf, bufsize, &kind) == 0 ? 1 : -1;
        }
    }
    SSL_free(ssl);
    close(fd);
    if (rc != 1) {
        w->errors[kind]++;
        return -1;
    }
    return 0;
}

static void *tls_worker(void *arg) { return rate_loop(arg, one_tls_exchange); }

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_ms(uint32_t *v, size_t n, double p) {
    if (n == 0) return -1;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i] / 1000.0;
}

static int run_load(int bulk, int tls) {
    int n = threads;
    worker_t *ws = calloc((size_t)n, sizeof *ws);
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)n + 1);
    for (int i = 0; i < n; i++) {
        ws[i].barrier = &barrier;
        if (tls || proxy_tls) ws[i].tls_ctx = tls_client_ctx();
        void *(*worker)(void *) = bulk ? bulk_worker : tls ? tls_worker : tunnels_worker;
        if (pthread_create(&ws[i].tid, NULL, worker, &ws[i]) != 0) {
            perror("loadgen: pthread_create");
            return 1;
        }
    }
    double start = now_s();
    deadline_global = start + duration;
    rate_start = start;
    pthread_barrier_wait(&barrier);
    long completed = 0, errors[E_COUNT] = {0}, total_err = 0, tls12 = 0, tls13 = 0;
    const char *cipher = NULL;
    long long bytes = 0;
    size_t lat_n = 0;
    double end = start;
    for (int i = 0; i < n; i++) {
        pthread_join(ws[i].tid, NULL);
        if (ws[i].tls_ctx) SSL_CTX_free(ws[i].tls_ctx);
        tls12 += ws[i].negotiated_tls12;
        tls13 += ws[i].negotiated_tls13;
        if (!cipher) cipher = ws[i].cipher;
        completed += ws[i].completed;
        bytes += ws[i].bytes;
        lat_n += ws[i].lat_len;
        if (ws[i].end > end) end = ws[i].end;
        for (int k = 0; k < E_COUNT; k++) errors[k] += ws[i].errors[k];
    }
    for (int k = 0; k < E_COUNT; k++) total_err += errors[k];
    double elapsed = end - start;
    if (bulk) {
        printf("mode=bulk streams=%d duration_s=%.2f completed_streams=%ld bytes=%lld mbps=%.1f errors=%ld", n, elapsed,
               completed, bytes, bytes / elapsed / 1e6, total_err);
    } else {
        uint32_t *all = malloc((lat_n ? lat_n : 1) * sizeof *all);
        size_t off = 0;
        for (int i = 0; i < n; i++) {
            memcpy(all + off, ws[i].lat_us, ws[i].lat_len * sizeof *all);
            off += ws[i].lat_len;
            free(ws[i].lat_us);
        }
        qsort(all, lat_n, sizeof *all, cmp_u32);
        if (tls) printf("mode=tls tls_max=%s ", tls_max_version == TLS1_3_VERSION ? "1.3" : "1.2");
        printf("%sthreads=%d duration_s=%.2f completed=%ld rate=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f "
               "max_ms=%.3f errors=%ld",
               tls ? "" : "mode=tunnels ", n, elapsed, completed, completed / elapsed, pct_ms(all, lat_n, 0.50), pct_ms(all, lat_n, 0.90),
               pct_ms(all, lat_n, 0.99), lat_n ? all[lat_n - 1] / 1000.0 : -1.0, total_err);
        free(all);
    }
    for (int k = 0; k < err_kinds_printed; k++) printf(" %s=%ld", err_names[k], errors[k]);
    if (tls) printf(" negotiated_tls13=%ld negotiated_tls12=%ld cipher=%s", tls13, tls12, cipher ? cipher : "none");
    printf("\n");
    fflush(stdout);
    free(ws);
    return 0;
}

// ---- idle ----

typedef struct {
    pthread_t tid;
    int *fds;
    long from, to;
    long ok, skipped;
    long errors[E_COUNT];
} opener_t;

// A proxy at its limit (descriptors, clients) tends to leave new connections unanswered: after a few
// failures in a row, or 120 s, the openers stop and count the rest as skipped instead of waiting
// io_timeout_s (5 s in this mode) for each.
#define IDLE_GIVE_UP_AFTER 3
#define IDLE_OPEN_LIMIT_S 120.0
static atomic_int idle_give_up;
static double idle_open_deadline;

static void *idle_opener(void *arg) {
    opener_t *o = arg;
    int failures_in_a_row = 0;
    for (long i = o->from; i < o->to; i++) {
        o->fds[i] = -1;
        if (atomic_load(&idle_give_up) || now_s() > idle_open_deadline) {
            atomic_store(&idle_give_up, 1);
            o->skipped += o->to - i;
            break;
        }
        int kind = E_IO;
        int fd = open_conn(&kind);
        conn_t plain = {fd, NULL};
        if (fd >= 0 && (send_connect(&plain, &kind) != 0 || read_connect_head(&plain, NULL, NULL, &kind) != 0)) {
            close(fd);
            fd = -1;
        }
        if (fd < 0) {
            o->errors[kind]++;
            if (++failures_in_a_row >= IDLE_GIVE_UP_AFTER) atomic_store(&idle_give_up, 1);
            continue;
        }
        failures_in_a_row = 0;
        o->fds[i] = fd;
        o->ok++;
    }
    return NULL;
}

static volatile sig_atomic_t stdin_done;
static void *stdin_waiter(void *arg) {
    (void)arg;
    char buf[256];
    (void)!read(0, buf, sizeof buf); // a line or EOF
    stdin_done = 1;
    kill(getpid(), SIGUSR1);
    return NULL;
}

static int run_idle(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL); // inherited by the threads; sigtimedwait below
    int *fds = malloc((size_t)(count > 0 ? count : 1) * sizeof *fds);
    for (long i = 0; i < count; i++) fds[i] = -1;
    int n = threads;
    if (n > count) n = (int)(count > 0 ? count : 1);
    opener_t *os = calloc((size_t)n, sizeof *os);
    double t0 = now_s();
    idle_open_deadline = t0 + IDLE_OPEN_LIMIT_S;
    for (int i = 0; i < n; i++) {
        os[i].fds = fds;
        os[i].from = count * i / n;
        os[i].to = count * (i + 1) / n;
        pthread_create(&os[i].tid, NULL, idle_opener, &os[i]);
    }
    long ok = 0, skipped = 0, errors[E_COUNT] = {0}, total_err = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(os[i].tid, NULL);
        ok += os[i].ok;
        skipped += os[i].skipped;
        for (int k = 0; k < E_COUNT; k++) errors[k] += os[i].errors[k];
    }
    for (int k = 0; k < E_COUNT; k++) total_err += errors[k];
    printf("ready count=%ld established=%ld skipped=%ld open_s=%.2f errors=%ld", count, ok, skipped, now_s() - t0,
           total_err);
    for (int k = 0; k < err_kinds_printed; k++) printf(" %s=%ld", err_names[k], errors[k]);
    printf("\n");
    fflush(stdout);

    if (use_stdin) {
        pthread_t tid;
        pthread_create(&tid, NULL, stdin_waiter, NULL);
        pthread_detach(tid);
    }
    struct timespec ts = {(time_t)hold, (long)((hold - (double)(time_t)hold) * 1e9)};
    int sig = sigtimedwait(&set, NULL, &ts);
    const char *why = sig < 0 ? "hold-timeout" : stdin_done ? "stdin" : "signal";

    // A tunnel the proxy closed meanwhile is readable (EOF) now.
    long dropped = 0;
    struct pollfd *pfds = calloc((size_t)count, sizeof *pfds);
    long m = 0;
    for (long i = 0; i < count; i++)
        if (fds[i] >= 0) pfds[m++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    if (m > 0 && poll(pfds, (nfds_t)m, 0) > 0)
        for (long i = 0; i < m; i++)
            if (pfds[i].revents) dropped++;
    for (long i = 0; i < count; i++)
        if (fds[i] >= 0) close(fds[i]);
    printf("done established=%ld dropped_while_held=%ld woke_by=%s\n", ok, dropped, why);
    fflush(stdout);
    return 0;
}

// ---- quic ----

// Sends FILE's datagrams to the proxy address in turn, in batches, until the time is up.
static int run_quic(void) {
    FILE *file = fopen(datagram_file, "rb");
    if (!file) {
        fprintf(stderr, "loadgen: %s: %s\n", datagram_file, strerror(errno));
        return 2;
    }
    size_t cap = 1024, n = 0;
    unsigned char **data = malloc(cap * sizeof *data);
    size_t *lengths = malloc(cap * sizeof *lengths);
    unsigned char header[2];
    while (fread(header, 1, 2, file) == 2) {
        size_t length = (size_t)header[0] << 8 | header[1];
        if (n == cap) {
            cap *= 2;
            data = realloc(data, cap * sizeof *data);
            lengths = realloc(lengths, cap * sizeof *lengths);
        }
        data[n] = malloc(length);
        if (fread(data[n], 1, length, file) != length) break;
        lengths[n++] = length;
    }
    fclose(file);
    if (n == 0) {
        fprintf(stderr, "loadgen: %s holds no datagram\n", datagram_file);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&proxy_addr, sizeof proxy_addr) != 0) {
        fprintf(stderr, "loadgen: UDP socket to the proxy: %s\n", strerror(errno));
        return 1;
    }
    enum { BATCH = 64 };
    struct mmsghdr messages[BATCH];
    struct iovec vectors[BATCH];
    long sent = 0, failed = 0;
    size_t next = 0;
    double start = now_s(), deadline = start + duration;
    while (now_s() < deadline) {
        if (rate > 0) {
            double wait = start + (double)sent / rate - now_s();
            if (wait > 0) usleep((useconds_t)(wait * 1e6));
        }
        memset(messages, 0, sizeof messages);
        for (int i = 0; i < BATCH; i++) {
            vectors[i].iov_base = data[next];
            vectors[i].iov_len = lengths[next];
            messages[i].msg_hdr.msg_iov = &vectors[i];
            messages[i].msg_hdr.msg_iovlen = 1;
            next = (next + 1) % n;
        }
        int done = sendmmsg(fd, messages, BATCH, 0);
        // The receiver's refusals (ICMP port unreachable) come back as errors on a connected socket.
        if (done < 0) failed++;
        else sent += done;
    }
    double elapsed = now_s() - start;
    printf("mode=quic datagrams=%zu duration_s=%.2f sent=%ld rate=%.1f send_errors=%ld\n", n, elapsed, sent, sent / elapsed,
           failed);
    fflush(stdout);
    return 0;
}

// ---- main ----

static void usage(void) {
    fprintf(stderr,
            "usage: loadgen tunnels|tls|bulk|idle --proxy HOST:PORT [--target HOST:PORT] [--direct] [--threads N]\n"
            "               [--streams N] [--duration SECONDS] [--path PATH] [--count K] [--hold SECONDS] [--stdin]\n"
            "               [--tls-max 1.3|1.2] [--proxy-header 'NAME: VALUE' ...] [--proxy-tls] [--target-names N]\n"
            "               [--rate N]\n"
            "       loadgen quic --proxy HOST:PORT --file FILE [--duration SECONDS] [--rate N]\n");
    exit(2);
}

static int parse_addr(const char *s, struct sockaddr_in *a) {
    char host[256];
    snprintf(host, sizeof host, "%s", s);
    char *colon = strrchr(host, ':');
    if (!colon) return -1;
    *colon = 0;
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)atoi(colon + 1));
    return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 2) usage();
    const char *mode = argv[1];
    const char *proxy = NULL;
    int target_given = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--direct")) direct = 1;
        else if (!strcmp(a, "--proxy-tls")) proxy_tls = 1;
        else if (!strcmp(a, "--stdin")) use_stdin = 1;
        else if (!v) usage();
        else if (!strcmp(a, "--proxy")) proxy = v, i++;
        else if (!strcmp(a, "--target")) snprintf(target, sizeof target, "%s", v), target_given = 1, i++;
        else if (!strcmp(a, "--tls-max")) {
            if (!strcmp(v, "1.3")) tls_max_version = TLS1_3_VERSION;
            else if (!strcmp(v, "1.2")) tls_max_version = TLS1_2_VERSION;
            else usage();
            i++;
        }
        else if (!strcmp(a, "--path")) path = v, i++;
        else if (!strcmp(a, "--proxy-header")) {
            size_t used = strlen(proxy_headers);
            if (used + strlen(v) + 3 > sizeof proxy_headers) usage();
            snprintf(proxy_headers + used, sizeof proxy_headers - used, "%s\r\n", v);
            i++;
        }
        else if (!strcmp(a, "--threads") || !strcmp(a, "--streams")) threads = atoi(v), i++;
        else if (!strcmp(a, "--duration")) duration = atof(v), i++;
        else if (!strcmp(a, "--count")) count = atol(v), i++;
        else if (!strcmp(a, "--hold")) hold = atof(v), i++;
        else if (!strcmp(a, "--target-names")) target_names = atol(v), i++;
        else if (!strcmp(a, "--rate")) rate = atof(v), i++;
        else if (!strcmp(a, "--file")) datagram_file = v, i++;
        else usage();
    }
    if (!proxy || parse_addr(proxy, &proxy_addr) != 0) {
        fprintf(stderr, "loadgen: --proxy must be IPV4:PORT\n");
        usage();
    }
    int is_tunnels = !strcmp(mode, "tunnels"), is_bulk = !strcmp(mode, "bulk"), is_idle = !strcmp(mode, "idle");
    int is_tls = !strcmp(mode, "tls");
    if (!strcmp(mode, "quic")) {
        if (!datagram_file || duration <= 0) usage();
        return run_quic();
    }
    if (!is_tunnels && !is_bulk && !is_idle && !is_tls) usage();
    if (is_tls) {
        err_kinds_printed = E_COUNT;
        if (!target_given) snprintf(target, sizeof target, "127.0.0.1:18443");
    }
    if (proxy_tls && !is_tunnels && !is_bulk) {
        fprintf(stderr, "loadgen: --proxy-tls is for the tunnels and bulk modes\n");
        return 2;
    }
    if (proxy_tls) err_kinds_printed = E_COUNT;
    if (is_idle) io_timeout_s = 5;
    if (is_idle && direct) {
        fprintf(stderr, "loadgen: idle has no direct mode\n");
        return 2;
    }
    if (threads <= 0) threads = is_tunnels || is_tls ? 8 : is_bulk ? 1 : 4;
    if (!path) path = is_bulk ? "/big" : "/small";
    if (duration <= 0 || count < 0) usage();
    signal(SIGPIPE, SIG_IGN);

    // File descriptors: raise the soft limit to the hard one; say so when it cannot fit the run.
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        long need = (is_idle ? count : threads) + 32;
        if ((rlim_t)need > rl.rlim_cur)
            fprintf(stderr, "loadgen: warning: RLIMIT_NOFILE is %llu, this run needs about %ld descriptors\n",
                    (unsigned long long)rl.rlim_cur, need);
    }
    return is_idle ? run_idle() : run_load(is_bulk, is_tls);
}

#!/usr/bin/env bash
# Dual-stack origins for the Happy Eyeballs tests, inside the network namespace the caller made
# (`unshare -n`, so nothing leaves the machine). This namespace (the proxy's) and an origin's namespace
# (a child `unshare -n`) are joined by a veth pair with IPv4 198.18.0.0/24 and IPv6 fd00::/64 (nodad):
#   198.18.0.2, fd00::2   the origin, answering on both families
#   fd00::3               the origin's address whose answers are black-holed (policy routing drops
#                         every packet from it): a connect never completes, silently
#   fd00::99, 198.18.0.99 nobody: neighbour discovery fails after about 3 s
#   fd00:66::/64          a blackhole route here: a connect fails at once
# The proxy gets pins (--resolve) and the tests' own DNS server (dns_server.py on 127.0.0.1). Each case
# is a curl through the proxy; its result is printed as "case NAME http=CODE", and the proxy's decision
# log is left in OUT/atsgate.log.
#
# usage: unshare -n dualstack.sh ATSGATE PYTHON FIXTURES_DIR OUT_DIR
set -euo pipefail
atsgate=$1 python=$2 fixtures=$3 out=$4
pids=()
# SIGKILL: a test runner may start this script with SIGTERM blocked, and its children inherit that.
cleanup() { for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

ip link set lo up
unshare -n sleep 120 &
origin_ns=$!
pids+=("$origin_ns")
for _ in $(seq 50); do
    [ "$(readlink "/proc/$origin_ns/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
    sleep 0.05
done
ip link add veth0 type veth peer name veth1
ip link set veth1 netns "$origin_ns"
ip addr add 198.18.0.1/24 dev veth0
ip -6 addr add fd00::1/64 dev veth0 nodad
ip link set veth0 up
ip -6 route add blackhole fd00:66::/64
nsenter -t "$origin_ns" -n sh -e -c '
    ip link set lo up
    ip addr add 198.18.0.2/24 dev veth1
    ip -6 addr add fd00::2/64 dev veth1 nodad
    ip -6 addr add fd00::3/64 dev veth1 nodad
    ip link set veth1 up
    ip -6 rule add from fd00::3 table 100
    ip -6 route add blackhole default table 100'

# The origin: one dual-stack listener on port 8080 that names the address it was reached at.
nsenter -t "$origin_ns" -n "$python" -c '
import http.server, socket
class Server(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_GET(self):
        body = ("reached at " + self.connection.getsockname()[0] + "\n").encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
Server(("::", 8080), Handler).serve_forever()' </dev/null >"$out/origin.log" 2>&1 &
pids+=("$!")

# The tests' own resolver: a name whose IPv6 path black-holes, and one whose AAAA answer never comes.
cat > "$out/zone.json" <<'ZONE'
{"hole.test": {"AAAA": ["fd00::3"], "A": ["198.18.0.2"], "ttl": 300},
 "lateaaaa.test": {"AAAA": ["fd00::2"], "A": ["198.18.0.2"], "AAAA-delay": 60, "ttl": 300}}
ZONE
# (It exits when its stdin closes: a FIFO this script holds open, closed when the script ends.)
mkfifo "$out/dns.stdin"
exec 3<>"$out/dns.stdin"
"$python" "$fixtures/dns_server.py" "$out/zone.json" <"$out/dns.stdin" >"$out/dns.log" 2>&1 3>&- &
pids+=("$!")
for _ in $(seq 100); do grep -q '^dns=' "$out/dns.log" 2>/dev/null && break; sleep 0.05; done
dns_port=$(sed -n 's/^dns=//p' "$out/dns.log")

echo '{"NSAllowsArbitraryLoads": true}' > "$out/policy.json"
"$atsgate" run --listen 127.0.0.1:3128 --policy "$out/policy.json" --connect-port 8080 \
    --connect-timeout 5 --dns-timeout 20 --dns-server "127.0.0.1:$dns_port" \
    --resolve both.test=fd00::2 --resolve both.test=198.18.0.2 \
    --resolve silent.test=fd00::3 --resolve silent.test=198.18.0.2 \
    --resolve nobody.test=fd00::99 --resolve nobody.test=198.18.0.2 \
    --resolve route.test=fd00:66::2 --resolve route.test=198.18.0.2 \
    --resolve nobody4.test=198.18.0.99 --resolve nobody4.test=fd00::2 \
    >"$out/atsgate.log" 2>"$out/atsgate.err" &
pids+=("$!")
for _ in $(seq 200); do grep -q 'listening on' "$out/atsgate.err" 2>/dev/null && break; sleep 0.05; done
for _ in $(seq 100); do "$python" -c 'import socket; socket.create_connection(("fd00::2", 8080), 1)' 2>/dev/null && break; sleep 0.05; done

run_case() { # name curl-arguments...
    local name=$1; shift
    local code
    code=$(curl --silent --output "$out/$name.body" --write-out '%{http_code}' --max-time 10 \
        --proxy http://127.0.0.1:3128 "$@" || true)
    echo "case $name http=$code body=$(tr -d '\n' < "$out/$name.body" 2>/dev/null)"
}
# Tunnels (never pooled, so every case makes its own race), and one forwarded request.
run_case both --proxytunnel http://both.test:8080/
run_case silent --proxytunnel http://silent.test:8080/
run_case nobody --proxytunnel http://nobody.test:8080/
run_case route --proxytunnel http://route.test:8080/
run_case nobody4 --proxytunnel http://nobody4.test:8080/
run_case hole --proxytunnel http://hole.test:8080/
run_case lateaaaa --proxytunnel http://lateaaaa.test:8080/
run_case forward http://silent.test:8080/
sleep 0.3 # the last record is written when its exchange ends

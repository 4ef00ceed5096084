import DecisionLog
import ProxyCore

/// The Prometheus text exposition format (version 0.0.4).
enum PrometheusText {
    static func render(_ metrics: LoopMetrics, _ gauges: ServerGauges, process: ProcessMetrics = .read()) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for sample in samples {
                out += sample.labels.isEmpty ? "\(name) \(sample.value)\n" : "\(name){\(sample.labels)} \(sample.value)\n"
            }
        }
        // `device` is left out when no --device matched: the same series Prometheus reads for an empty
        // label, and the lines of a proxy without devices stay as they were.
        func label(_ pairs: KeyValuePairs<String, String>) -> String {
            pairs.filter { $0.key != "device" || !$0.value.isEmpty }.map { "\($0.key)=\"\(escape($0.value))\"" }
                .joined(separator: ",")
        }
        /// Cumulative `buckets` (upper bound, count) per series, then +Inf, _sum and _count.
        func histogram(_ name: String, _ help: String,
                       _ series: [(labels: String, buckets: [(bound: Double, count: Int)], sum: Double, count: Int)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
            for one in series {
                let prefix = one.labels.isEmpty ? "" : one.labels + ","
                let suffix = one.labels.isEmpty ? "" : "{\(one.labels)}"
                for bucket in one.buckets {
                    out += "\(name)_bucket{\(prefix)le=\"\(bucket.bound)\"} \(bucket.count)\n"
                }
                out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(one.count)\n"
                out += "\(name)_sum\(suffix) \(one.sum)\n"
                out += "\(name)_count\(suffix) \(one.count)\n"
            }
        }
        family("atsgate_build_info", "gauge", "The running version.", [(label(["version": gauges.version]), "1")])
        family("atsgate_trust_store_info", "gauge",
               "The trust store certificates are judged against (--trust-store): its name and release.",
               [(label(["name": gauges.trustStore.name, "version": gauges.trustStore.version]), "1")])
        let decisions = metrics.decisions.sorted { $0.key < $1.key }
        family("atsgate_decisions_total", "counter",
               "Decision records by app (policy ID), device (--device; no label when none matched), action and reason "
                   + "(enforced=false in report mode).",
               decisions.map { (label(["app": $0.key.app, "device": $0.key.device, "action": $0.key.action,
                                       "reason": $0.key.reason, "enforced": $0.key.enforced ? "true" : "false"]),
                                "\($0.value)") })
        family("atsgate_connections_accepted_total", "counter", "Client connections accepted.",
               [("", "\(metrics.connectionsAccepted)")])
        family("atsgate_connections_open", "gauge", "Client connections open now.", [("", "\(gauges.connectionsOpen)")])
        family("atsgate_loop_connections_accepted_total", "counter",
               "Client connections accepted, by event loop (the balance of the loops: see --loops).",
               metrics.loops.enumerated().map { (label(["loop": String($0.offset)]), "\($0.element.accepted)") })
        family("atsgate_loop_connections_open", "gauge", "Client connections open now, by event loop.",
               metrics.loops.enumerated().map { (label(["loop": String($0.offset)]), "\($0.element.open)") })
        family("atsgate_bytes_total", "counter", "Payload bytes relayed, by direction (up is client to origin).",
               [(label(["direction": "up"]), "\(metrics.bytesUp)"), (label(["direction": "down"]), "\(metrics.bytesDown)")])
        histogram("atsgate_request_duration_seconds",
                  "How long requests took, by kind and action: answer (the proxy answered itself: head to answer), "
                      + "forward (to an origin: head to the end of its response), tunnel (a CONNECT: head to the origin "
                      + "connected, not the tunnel's life).",
                  metrics.requestDurations.series.map {
                      (label(["kind": $0.kind.label, "action": $0.action]), $0.buckets, $0.sum, $0.count)
                  })
        family("atsgate_tls_handshake_failures_total", "counter",
               "TLS handshakes refused or failed, by reason and the ATS rule that decided (R14-R17 of docs/reference/ats-rules.md; empty when none did).",
               metrics.handshakeFailures.sorted { $0.key < $1.key }.map {
                   (label(["reason": $0.key.reason, "rule": $0.key.rule]), "\($0.value)")
               })
        family("atsgate_tls_key_exchange_total", "counter",
               "Inspected TLS handshakes by app, device, the key-exchange group the server chose (IANA name; empty without one: "
                   + "TLS 1.2 RSA, or the handshake ended first) and whether the client offered a post-quantum group.",
               metrics.keyExchanges.sorted { $0.key < $1.key }.map {
                   (label(["app": $0.key.app, "device": $0.key.device, "group": $0.key.groupName,
                           "pq_offered": $0.key.postQuantumOffered ? "true" : "false"]), "\($0.value)")
               })
        family("atsgate_client_refused_certificates_total", "counter",
               "Inspected TLS handshakes the client itself refused after the server's Certificate (its pinning or "
                   + "trust evaluation: reason client-refused-certificate), by app, device and the alert it sent (encrypted: "
                   + "TLS 1.3, whose alert travels encrypted).",
               metrics.clientRefusals.sorted { $0.key < $1.key }.map {
                   (label(["app": $0.key.app, "device": $0.key.device, "alert": $0.key.alert]), "\($0.value)")
               })
        family("atsgate_transparent_connections_total", "counter",
               "Decision records of the transparent gate, by path (transparent: a connection a firewall redirected; "
                   + "quic: a QUIC attempt read and dropped) and result (the record's action).",
               metrics.transparent.sorted { $0.key < $1.key }.map {
                   (label(["path": $0.key.path, "result": $0.key.result]), "\($0.value)")
               })
        family("atsgate_quic_datagrams_total", "counter",
               "Datagrams the QUIC listener read, by what they were: client-hello, incomplete (part of a split "
                   + "ClientHello), retransmission, or why they were dropped as no valid client Initial.",
               metrics.quicDatagrams.sorted { $0.key < $1.key }.map { (label(["result": $0.key]), "\($0.value)") })
        family("atsgate_quic_attempts_remembered", "gauge",
               "QUIC connection attempts the Initial reader's bounded table holds (split ClientHellos, retransmissions).",
               [("", "\(metrics.quicRemembered)")])
        family("atsgate_probe_cache_total", "counter", "Certificate verdict lookups, by result (hit, miss).",
               gauges.probeCache.sorted { $0.key < $1.key }.map { (label(["result": $0.key]), "\($0.value)") })
        family("atsgate_upstream_connections_total", "counter",
               "Connections to origins, by the parent proxy they went through (empty: direct) and result "
                   + "(connected, or the dns-, upstream- or parent- reason that ended them).",
               metrics.upstream.sorted { $0.key < $1.key }.map {
                   (label(["parent": $0.key.parent, "result": $0.key.result]), "\($0.value)")
               })
        family("atsgate_parent_up", "gauge", "1 for a parent proxy in use, 0 while it is passed over after a failure.",
               gauges.parents.map { (label(["parent": $0.parent]), $0.up ? "1" : "0") })
        let resolver = gauges.resolver
        family("atsgate_dns_lookups_total", "counter",
               "Lookups sent to the resolver (one per name and address family), by result.",
               resolver.lookups.map { (label(["result": $0.result]), "\($0.count)") })
        family("atsgate_dns_cache_total", "counter",
               "Cache answers per name and address family: hit, negative (NXDOMAIN/NODATA), miss (a lookup was "
                   + "needed), stale (an expired answer served because the resolver failed, RFC 8767).",
               resolver.cache.map { (label(["result": $0.result]), "\($0.count)") })
        histogram("atsgate_dns_lookup_duration_seconds", "How long the resolver took to answer a lookup.",
                  [("", resolver.latency, resolver.latencySum, resolver.latencyCount)])
        family("atsgate_dns_lookups_in_flight", "gauge", "Lookups waiting for the resolver now.",
               [("", "\(resolver.inFlight)")])
        family("atsgate_dns_cache_entries", "gauge", "Answers (per name and address family) the cache holds.",
               [("", "\(resolver.cacheEntries)")])
        family("atsgate_blocking_queue_length", "gauge",
               "Blocking work waiting for a thread, by pool (certificates, probes, passwords).",
               gauges.blockingQueues.map { (label(["pool": $0.pool]), "\($0.waiting)") })
        family("atsgate_reloads_total", "counter", "Configuration reloads, by result.",
               [(label(["result": "success"]), "\(gauges.reloadsSucceeded)"),
                (label(["result": "failure"]), "\(gauges.reloadsFailed)")])
        family("atsgate_upgrades_total", "counter",
               "Binary upgrades (SIGUSR2), by result: success counts the new process taking over (and carries on from "
                   + "process to process), failure an upgrade after which this process kept serving.",
               [(label(["result": "success"]), "\(gauges.upgradesSucceeded)"),
                (label(["result": "failure"]), "\(gauges.upgradesFailed)")])
        family("atsgate_config_generation", "gauge", "The configuration generation new connections use (1 at start).",
               [("", "\(gauges.generation)")])
        family("atsgate_last_reload_timestamp_seconds", "gauge", "When the configuration last changed (Unix time).",
               [("", "\(gauges.lastReloadTime)")])
        family("atsgate_draining", "gauge", "1 while the daemon is stopping and no longer accepts.",
               [("", gauges.draining ? "1" : "0")])
        if let open = process.openFileDescriptors {
            family("process_open_fds", "gauge", "Open file descriptors.", [("", "\(open)")])
        }
        if let max = process.maxFileDescriptors {
            family("process_max_fds", "gauge", "Maximum number of open file descriptors (the soft limit).", [("", "\(max)")])
        }
        family("atsgate_log_dropped_records_total", "counter",
               "Decision records the log lost: its buffer was full (--log-overflow drop) or a write failed.",
               [("", "\(gauges.log.droppedTotal)")])
        family("atsgate_log_buffered_bytes", "gauge",
               "Bytes of decision records handed to the log's writer and not yet written.",
               [("", "\(gauges.log.bufferedBytes)")])
        family("atsgate_log_buffer_capacity_bytes", "gauge", "The log's bound (--log-buffer).",
               [("", "\(gauges.log.capacity)")])
        family("atsgate_log_paused", "gauge",
               "1 while a full log holds new connections and requests back (--log-overflow pause).",
               [("", gauges.log.paused ? "1" : "0")])
        return out
    }

    private static func escape(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
}

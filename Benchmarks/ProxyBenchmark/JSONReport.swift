import Foundation

/// The numbers of a run as JSON (`--json FILE`): every cell, the error counts and the versions.
extension Report {
    func json() throws -> Data {
        let results = bench.results
        func number(_ column: String, _ metric: String) -> Any { results[column, metric] ?? NSNull() }
        func count(_ column: String, _ metric: String) -> Any { results.errorCount(column, metric) ?? NSNull() }
        var columns: [String: Any] = [:]
        for column in bench.columns.map(\.rawValue) {
            var entry: [String: Any] = [
                "version": results.versions.first { $0.0 == column }?.1 ?? NSNull(),
                "note": results.note(column, "all") ?? NSNull(),
                "other_processes_cpu_pct": results.otherLoad[column] ?? NSNull(),
                "other_processes": (results.otherProcesses[column] ?? []).map { ["command": $0.0, "cpu_s": $0.1] },
                "new_tunnels_per_s": number(column, "tps"),
                "tunnel_p50_ms": number(column, "p50"),
                "tunnel_p99_ms": number(column, "p99"),
                "proxy_cpu_us_per_tunnel": number(column, "tps_cpu_us"),
                "proxy_tls_new_tunnels_per_s": number(column, "tps_tls"),
                "proxy_tls_tunnel_p50_ms": number(column, "p50_tls"),
                "proxy_tls_tunnel_p99_ms": number(column, "p99_tls"),
                "proxy_tls_proxy_cpu_us_per_tunnel": number(column, "tps_tls_cpu_us"),
                "system_calls_per_tunnel": number(column, "syscalls"),
                "system_calls_per_tunnel_by_call": Dictionary((results.syscallMix[column] ?? []).map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a }),
                "bulk_1_stream_mb_per_s": number(column, "bulk1"),
                "bulk_4_streams_mb_per_s": number(column, "bulk4"),
                "forward_req_per_s": number(column, "fwd"),
                "proxy_cpu_us_per_forwarded_request": number(column, "fwd_cpu_us"),
                "idle_kib_per_tunnel": number(column, "rss"),
                "idle_established": number(column, "idle_established"),
                "idle_rss_before_kib": number(column, "rss_before"),
                "idle_rss_after_kib": number(column, "rss_after"),
                "errors": [
                    "tunnels": count(column, "tps"), "proxy_tls_tunnels": count(column, "tps_tls"),
                    "bulk_1": count(column, "bulk1"), "bulk_4": count(column, "bulk4"),
                    "forward": count(column, "fwd"), "idle": count(column, "rss"), "tls13": count(column, "tls13"),
                    "tls12": count(column, "tls12"),
                ],
            ]
            for m in ["tls13", "tls12"] {
                entry[m + "_tunnels_per_s"] = number(column, m)
                entry[m + "_p50_ms"] = number(column, m + "_p50")
                entry[m + "_p99_ms"] = number(column, m + "_p99")
                entry[m + "_proxy_cpu_us_per_tunnel"] = number(column, m + "_cpu_us")
            }
            columns[column] = entry
        }
        var inspection: Any = NSNull()
        if bench.selected(.atsgate), bench.atsgateNote == nil, bench.atsgateTLSNote == nil, bench.tlsRows.tls {
            var runs: [String: Any] = ["atsgate_flags": "--local-network 192.0.2.0/24 --ca-file CA --certificate-check before"]
            for (name, column) in [("off", "atsgate_off"), ("cached", "atsgate"), ("cold", "atsgate_cold")] {
                var byVersion: [String: Any] = [:]
                for m in ["tls13", "tls12"] {
                    byVersion[m] = [
                        "tunnels_per_s": number(column, m), "p50_ms": number(column, m + "_p50"),
                        "p99_ms": number(column, m + "_p99"), "completed": number(column, m + "_completed"),
                        "atsgate_cpu_us_per_tunnel": number(column, m + "_cpu_us"), "errors": count(column, m),
                        "verdict_hits": number(column, m + "_hit"), "verdict_misses": number(column, m + "_miss"),
                        "handshakes_refused": number(column, m + "_refused"),
                        "other_processes_cpu_pct": number(column, m + "_other"),
                    ]
                }
                runs[name] = byVersion
            }
            func cost(_ m: String) -> Any {
                guard let on = results["atsgate", m], let off = results["atsgate_off", m], off > 0 else { return NSNull() }
                return 100 * (1 - on / off)
            }
            runs["cost_pct"] = ["tls13": cost("tls13"), "tls12": cost("tls12")]
            runs["target_pct"] = Target.inspectionCostPercent
            runs["check_without_ca"] = [
                "tls13_completed": number("atsgate_check", "tls13_completed"),
                "tls13_refused": number("atsgate_check", "tls13_refused"),
                "tls12_completed": number("atsgate_check", "tls12_completed"),
                "tls12_refused": number("atsgate_check", "tls12_refused"),
                "reasons": results.checkReasons,
            ]
            runs["ciphers"] = ["tls13": results.ciphers["tls13"] as Any? ?? NSNull(), "tls12": results.ciphers["tls12"] as Any? ?? NSNull()]
            inspection = runs
        }
        let root: [String: Any] = [
            "date": ISO8601DateFormatter().string(from: started),
            "cores": ProcFS.cores,
            "quick": bench.quick,
            "duration_s": bench.duration,
            "seconds_in_all": seconds,
            "idle_count": bench.idleCount,
            "loadavg_at_start": bench.loadAverageAtStart,
            "origin": "127.0.0.1:\(Bench.originPort)",
            "tls_origin": bench.tlsRows.tls ? "127.0.0.1:\(Bench.tlsPort)" : NSNull(),
            "tls_rows": bench.tlsRows.rawValue,
            "atsgate_available": bench.selected(.atsgate) && bench.atsgateNote == nil,
            "atsgate_note": bench.atsgateNote ?? NSNull(),
            "columns": columns,
            "tls_inspection": inspection,
            "rounds": results.rounds,
            // --repeat: every figure's values over the rounds, by "column:metric" (the cells are medians).
            "spread": Dictionary(uniqueKeysWithValues: results.spreads.map { key, spread in
                (key, ["min": spread.minimum, "max": spread.maximum, "median": spread.median, "values": spread.values] as [String: Any])
            }),
            "loop_scaling": bench.loopScaling ? [
                "one_loop_one_cpu": ["tunnels_per_s": number("atsgate_1loop", "tps"), "p99_ms": number("atsgate_1loop", "p99"),
                                     "proxy_cpu_us_per_tunnel": number("atsgate_1loop", "tps_cpu_us")],
                "two_loops_two_cpus": ["tunnels_per_s": number("atsgate_2loops", "tps"), "p99_ms": number("atsgate_2loops", "p99"),
                                       "proxy_cpu_us_per_tunnel": number("atsgate_2loops", "tps_cpu_us")],
                "client_cpus": bench.loopScalingClientCPUs,
                "goal_ratio": Bench.loopScalingGoal,
            ] as [String: Any] : NSNull(),
        ]
        return try JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys])
    }
}

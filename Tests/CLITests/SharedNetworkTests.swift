import Foundation
import Glibc
import Testing
import TestSupport

/// The destination ACL through the real daemon, with clients that are not on loopback: a device on
/// the lab's LAN (a network namespace joined by a veth pair) uses the proxy on the proxy host's LAN
/// address. It must not reach the proxy host (its loopback services, the proxy's own listeners, the
/// admin port), the cloud metadata address, or the other default-denied ranges, by any spelling or
/// name; witness origins on the proxy host and on the LAN log every connection they accept, so
/// "nothing got through" is their empty log, not the proxy's word.
@Suite(.serialized) struct SharedNetworkTests {
    static let proxy = "\(LabNetwork.proxyAddress):3128"

    static func arbitraryLoads(_ directory: TemporaryDirectory) throws -> String {
        // ATS out of the way, so what refuses is the ACL alone.
        try directory.write("arbitrary.json", #"{"NSAppTransportSecurity": {"NSAllowsArbitraryLoads": true}}"#)
    }

    /// The requests of Tests/Fixtures/proxy_client.py, sent from a LAN device; one result each.
    static func send(_ network: LabNetwork, from source: String = LabNetwork.device, _ requests: [String]) throws -> [[String: Any]] {
        let run = try network.call(in: network.lanPID, Origin.python,
                                   [Fixtures.path("proxy_client.py"), "--source", source, proxy] + requests)
        #expect(run.status == 0, "\(run.stderr)")
        let results = try run.jsonLines()
        #expect(results.count == requests.count, "\(run.stdout)\(run.stderr)")
        return results
    }

    static func daemon(_ network: LabNetwork, _ arguments: [String]) throws -> Daemon {
        let process = try network.start(in: network.hostPID, Atsgate.binary.path, ["run"] + arguments)
        return try Daemon(started: process, port: 3128)
    }

    static func records(_ daemon: Daemon, expected: Int) throws -> [[String: Any]] {
        try daemon.stop(expected: expected).records
    }

    /// Every host a device might name to reach the proxy host or the default-denied ranges.
    static let deniedHosts = [
        "127.0.0.1", "127.0.0.2", "2130706433", "0x7f.1", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]", "[::1]",
        "0.0.0.0", "0", "[::]", "localhost", "internal.lab", "169.254.169.254", "meta.lab", "[::ffff:169.254.169.254]",
        "[fe80::1]", "224.0.0.1", "[ff02::1]", "255.255.255.255", "198.18.0.1", "rebind.lab",
    ]

    @Test func aDeviceOnTheLabNetworkCannotReachTheProxyHost() throws {
        let network = try LabNetwork()
        let directory = try TemporaryDirectory()
        let hostOrigin = try WitnessOrigin(network, in: network.hostPID, listen: ["[::]:8080"])
        let lanOrigin = try WitnessOrigin(network, in: network.lanPID, listen: ["\(LabNetwork.lanServer):8081"])
        let daemon = try Self.daemon(network, [
            "--listen", Self.proxy, "--listen", "127.0.0.1:3128", "--admin", "\(LabNetwork.proxyAddress):9090",
            "--allow-client", "198.18.0.0/15", "--allow-client", "127.0.0.0/8",
            "--policy", try Self.arbitraryLoads(directory),
            "--connect-port", "8080", "--connect-port", "8081", "--connect-port", "3128", "--connect-port", "9090",
            "--resolve", "internal.lab=127.0.0.1", "--resolve", "meta.lab=\(LabNetwork.metadata)",
            "--resolve", "rebind.lab=\(LabNetwork.proxyAddress)", "--resolve", "lanhost.lab=\(LabNetwork.lanServer)",
        ])

        // By literal, odd spelling, name, --resolve and DNS (localhost), forwarded and tunnelled.
        let denied = Self.deniedHosts.flatMap { ["GET http://\($0):8080/", "CONNECT \($0):8080"] }
            + ["CONNECT 198.18.0.1:3128", "CONNECT 198.18.0.1:9090", "GET http://198.18.0.1:9090/metrics",
               "GET http://rebind.lab:9090/metrics"]
        for result in try Self.send(network, denied) {
            #expect(result["status"] as? Int == 403, "\(result)")
            #expect(result["reason"] as? String == "destination-not-allowed", "\(result)")
            #expect((result["body"] as? String)?.contains("--allow-dest") == true, "\(result)")
        }
        // The proxy's own listening address and port, forwarded: the loop rule answers first.
        let loop = try Self.send(network, ["GET http://198.18.0.1:3128/"])
        #expect(loop.first?["status"] as? Int == 508)

        // A real client: curl through the proxy, plain and tunnelled.
        let plain = try network.call(in: network.lanPID, "/usr/bin/curl", ["-s", "-D", "-", "-o", "/dev/null", "--max-time", "10",
                                                                            "-x", "http://\(Self.proxy)", "http://localhost:8080/"])
        #expect(plain.stdout.hasPrefix("HTTP/1.1 403 "), "\(plain.stdout)\(plain.stderr)")
        #expect(plain.stdout.contains("X-ATS-Reason: destination-not-allowed"), "\(plain.stdout)")
        let tunnel = try network.call(in: network.lanPID, "/usr/bin/curl", ["-s", "-p", "-o", "/dev/null", "-w", "%{http_connect}",
                                                                             "--max-time", "10", "-x", "http://\(Self.proxy)",
                                                                             "http://\(LabNetwork.metadata):8080/latest/meta-data/"])
        #expect(tunnel.stdout == "403", "\(tunnel.stdout)\(tunnel.stderr)")

        // Private ranges stay reachable: the LAN's own server, by address and by name.
        for result in try Self.send(network, ["GET http://\(LabNetwork.lanServer):8081/", "CONNECT \(LabNetwork.lanServer):8081",
                                              "GET http://lanhost.lab:8081/"]) {
            #expect(result["status"] as? Int == 200, "\(result)")
            #expect(result["body"] as? String == "witness\n", "\(result)")
        }
        // A client on the proxy host keeps the host's reach, with no flag.
        let local = try network.call(in: network.hostPID, "/usr/bin/curl", ["-s", "--max-time", "10", "-x", "http://127.0.0.1:3128",
                                                                             "http://127.0.0.1:8080/"])
        #expect(local.stdout == "witness\n", "\(local.stdout)\(local.stderr)")

        let expected = denied.count + 1 + 2 + 3 + 1
        let records = try Self.records(daemon, expected: expected)
        let refusals = records.filter { $0["reason"] as? String == "destination-not-allowed" }
        #expect(refusals.count == denied.count + 2, "\(records.count) records")
        for record in refusals {
            #expect(record["action"] as? String == "block")
            #expect(record["enforced"] as? Bool == true)
            #expect(record["status"] as? Int == 403)
            #expect(record["upstream_ip"] is NSNull, "\(record)")
        }
        let messages = refusals.compactMap { $0["message"] as? String }
        #expect(messages.contains("destination meta.lab (169.254.169.254) is not allowed for clients off the proxy host: "
                                  + "169.254.0.0/16 (link-local: cloud instance metadata lives there); --allow-dest 169.254.169.254, "
                                  + "or --allow-dest meta.lab for whatever it resolves to, opens it"), "\(messages)")
        #expect(messages.contains { $0.hasPrefix("destination 127.0.0.1 is not allowed") && $0.contains("127.0.0.0/8 (loopback") })
        #expect(messages.contains { $0.contains("198.18.0.1 is this proxy's own address (the admin listener is on 198.18.0.1:9090)")
                                    || $0.contains("198.18.0.1 is this proxy's own address (the proxy listens on 198.18.0.1:3128)") })
        #expect(records.allSatisfy { ($0["client"] as? String)?.hasPrefix("198.18.0.1:") != true },
                "the proxy never reached itself")

        // The witnesses: on the proxy host only the loopback client's request arrived; on the LAN, the
        // three allowed ones, all from the proxy.
        #expect(hostOrigin.accepted.count == 1, "\(hostOrigin.accepted)")
        #expect(hostOrigin.accepted.first?.hasPrefix("::ffff:127.0.0.1:8080 from ::ffff:127.0.0.1:") == true, "\(hostOrigin.accepted)")
        #expect(lanOrigin.accepted.count == 3, "\(lanOrigin.accepted)")
        #expect(lanOrigin.accepted.allSatisfy { $0.contains(" from \(LabNetwork.proxyAddress):") }, "\(lanOrigin.accepted)")
    }

    @Test func explicitRulesRoutesConfigKeysAndReportMode() throws {
        let network = try LabNetwork()
        let directory = try TemporaryDirectory()
        let hostOrigin = try WitnessOrigin(network, in: network.hostPID, listen: ["[::]:8080"])
        let lanOrigin = try WitnessOrigin(network, in: network.lanPID, listen: ["\(LabNetwork.lanServer):8081"])
        let config = try directory.write("atsgate.conf", """
            # The ACL's config keys (flags given on the command line would replace them).
            deny-dest = .blocked.lab
            deny-dest = \(LabNetwork.lanServer)
            allow-dest = 127.0.0.2
            allow-dest = meta.lab
            """)
        let daemon = try Self.daemon(network, [
            "--config", config, "--mode", "report",
            "--listen", Self.proxy, "--listen", "127.0.0.1:3128", "--allow-client", "198.18.0.0/15", "--allow-client", "127.0.0.0/8",
            "--policy", "lab=\(try Self.arbitraryLoads(directory))", "--connect-port", "8080", "--connect-port", "8081",
            "--route", "client:\(LabNetwork.device)/32=lab,allow-dest=127.0.0.0/8,deny-dest=127.0.0.3",
            "--resolve", "meta.lab=\(LabNetwork.metadata)", "--resolve", "x.blocked.lab=\(LabNetwork.lanServer)",
        ])
        // The routed device (198.18.0.2).
        let routed = try Self.send(network, [
            "GET http://meta.lab:8080/", "GET http://\(LabNetwork.metadata):8080/", "GET http://127.0.0.1:8080/",
            "CONNECT 127.0.0.3:8080", "GET http://\(LabNetwork.lanServer):8081/", "GET http://x.blocked.lab:8081/",
        ])
        #expect(routed.map { $0["status"] as? Int ?? 0 } == [200, 403, 200, 403, 403, 403], "\(routed)")
        // Another device, which no route names.
        let unrouted = try Self.send(network, from: LabNetwork.lanServer, ["GET http://127.0.0.1:8080/", "GET http://127.0.0.2:8080/"])
        #expect(unrouted.map { $0["status"] as? Int ?? 0 } == [403, 200], "\(unrouted)")
        // An explicit deny holds for a client on the proxy host too.
        let local = try network.call(in: network.hostPID, "/usr/bin/curl", [
            "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-x", "http://127.0.0.1:3128",
            "http://\(LabNetwork.lanServer):8081/",
        ])
        #expect(local.stdout == "403", "\(local.stdout)\(local.stderr)")

        let records = try Self.records(daemon, expected: 9)
        let refusals = records.filter { $0["reason"] as? String == "destination-not-allowed" }
        #expect(refusals.count == 6)
        #expect(refusals.allSatisfy { $0["enforced"] as? Bool == true }, "report mode enforces the ACL")
        let messages = Set(refusals.compactMap { $0["message"] as? String })
        #expect(messages.contains("destination 127.0.0.3 is not allowed: deny-dest=127.0.0.3 of --route "
                                  + "client:198.18.0.2/32=lab denies it (an explicit deny wins over every allow)"), "\(messages)")
        #expect(messages.contains("destination 198.18.0.3 is not allowed: --deny-dest 198.18.0.3 denies it "
                                  + "(an explicit deny wins over every allow)"), "\(messages)")
        #expect(messages.contains("destination x.blocked.lab (198.18.0.3) is not allowed: --deny-dest .blocked.lab denies it "
                                  + "(an explicit deny wins over every allow)"), "\(messages)")
        #expect(messages.contains { $0.hasPrefix("destination 169.254.169.254 is not allowed for clients off the proxy host") })

        let reached = Set(hostOrigin.accepted.map { String($0.prefix { $0 != " " }) })
        #expect(reached == ["::ffff:169.254.169.254:8080", "::ffff:127.0.0.1:8080", "::ffff:127.0.0.2:8080"], "\(hostOrigin.accepted)")
        #expect(lanOrigin.accepted.isEmpty, "\(lanOrigin.accepted)")
    }

    /// `--cleartext upgrade` connects on its own (to the TLS port): the same check holds there.
    @Test func theUpgradePathIsCheckedToo() throws {
        let network = try LabNetwork()
        let hostOrigin = try WitnessOrigin(network, in: network.hostPID, listen: ["[::]:8443"])
        let lanOrigin = try WitnessOrigin(network, in: network.lanPID, listen: ["\(LabNetwork.lanServer):8443"])
        let daemon = try Self.daemon(network, [
            "--listen", Self.proxy, "--allow-client", "198.18.0.0/15", "--cleartext", "upgrade",
            "--upgrade-port", "8080=8443", "--handshake-timeout", "2",
            "--resolve", "internal.lab=127.0.0.1", "--resolve", "lanhost.lab=\(LabNetwork.lanServer)",
        ])
        let results = try Self.send(network, ["GET http://internal.lab:8080/", "GET http://lanhost.lab:8080/"])
        #expect(results.first?["status"] as? Int == 403, "\(results)")
        #expect(results.first?["reason"] as? String == "destination-not-allowed", "\(results)")
        // The LAN's server is reached over TLS (the witness speaks none, so the upgrade fails: 504 or 502).
        #expect([502, 504].contains(results.last?["status"] as? Int ?? 0), "\(results)")
        let records = try Self.records(daemon, expected: 2)
        #expect(records.contains { $0["reason"] as? String == "destination-not-allowed"
                                   && ($0["message"] as? String)?.hasPrefix("destination internal.lab (127.0.0.1)") == true }, "\(records)")
        #expect(hostOrigin.accepted.isEmpty, "\(hostOrigin.accepted)")
        #expect(!lanOrigin.accepted.isEmpty, "\(lanOrigin.accepted)")
    }

    @Test func badDestinationPatternsStopTheStartNamingTheFlag() throws {
        let bad = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--deny-dest", "10.0.0.0/33"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--deny-dest 10.0.0.0/33: expected a CIDR"), "\(bad.stderr)")
        let route = try Atsgate.run(["run", "--listen", "127.0.0.1:0", "--route", "client:10.0.0.0/8=embedded,allow-dest=a b"])
        #expect(route.status == 2)
        #expect(route.stderr.contains("allow-dest=a b: expected a CIDR"), "\(route.stderr)")
    }
}

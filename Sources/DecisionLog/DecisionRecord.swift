import ATSPolicy
import Dispatch
import EventLoops
import Foundation
import Glibc
import POSIX
import ProxyAccess
import TLSWire

/// One decision as the log records it; field names are INTERFACE.md's.
package struct DecisionRecord {
    package var time: Double
    package var client: SocketAddress
    package var method: String
    package var decision: Decision?
    /// What the request named, known before any decision: the record of a request refused before its
    /// policy decided (`no-policy`) still says where it was going.
    package var target: Destination?
    /// No policy was chosen for the request (`no-policy`): its `policy` and `app` are null, not the
    /// configuration's first policy.
    package var unrouted = false
    /// Set by `ProxyConnection.enforce` and `recordFailure` only (scripts/check-record-writers holds
    /// the rule); else the decision's.
    package var action: RecordAction?
    package var reason: Reason?
    /// The TLS-level rule that decided (R14-R17), when one did; else the policy lookup's (R7-R12).
    package var rule: RuleID?
    package var message: String?
    /// False for what report mode only recorded; set when the record is logged.
    package var enforced = true
    package var status: Int?
    package var upstreamIP: IPAddress?
    /// What the TLS handshake showed (CONNECT inspection, or the upstream of an upgrade).
    package var tlsVersion: String?
    package var cipher: String?
    package var sni: String?
    /// The key exchange of an inspected handshake, once its ClientHello was read.
    package var keyExchange: KeyExchangeFacts?
    package var certificate: LoggedCertificate?
    /// Certificate findings tolerated because the host allows cleartext (R15).
    package var toleratedFindings: [String] = []
    /// The certificate the deciding certificate finding is about (0 = the leaf): `certificate_depth`,
    /// written only on a certificate failure.
    package var certificateDepth: Int?
    /// The caIssuers URL(s) the chain was completed from (`aia_fetched`): written, null when none was
    /// needed, on every record whose certificate was judged.
    package var aiaFetched: String?
    package var bytesUp = 0
    package var bytesDown = 0
    package var durationMilliseconds = 0.0
    /// Seconds from the request head to the origin connected (through a parent: its 200 to our
    /// CONNECT); nil when none was. Not logged: /metrics' request durations (RequestDurations).
    package var connectedAfter: Double?
    /// The policy ID that judged the request, and its file (the `policy` field; else the generation's).
    package var app: String?
    package var policy: String?
    /// Which routing step chose the policy.
    package var route: RouteKind?
    package var userAgent: String?
    /// The proxy user who presented credentials (verified or not); never the password.
    package var proxyUser: String?
    /// The lab's name for the client (`--device`: its address, or its verified proxy user).
    package var device: String?
    /// The client reached a TLS listener (`client_tls`, written only when true, as `sni` is only
    /// when there was one).
    package var clientTLS = false
    /// How long this request waited for the origin's name, when the resolver was asked (`dns_ms`; a
    /// lookup already in flight is shared, the wait is the request's own); whether the
    /// addresses came without a lookup (`dns_cached`: an IP literal, a pinned or cached name); nil
    /// both when nothing was resolved here (a block before, or a parent that resolves).
    package var dnsMilliseconds: Double?
    package var dnsCached: Bool?
    /// An expired answer was served because the resolver failed (RFC 8767).
    package var dnsStale = false
    /// `HOST:PORT` of the parent proxy the request went through.
    package var parent: String?
    /// The client refused the server's certificate in the watched handshake (`client_alert`,
    /// `pinned_domain`; written only then).
    package var clientRefusal: ClientRefusal?
    /// How the traffic reached the proxy (`path`), and where an intercepted connection was going
    /// (`original_dst`, null on the proxy path and for a QUIC attempt whose destination NAT hid).
    package var path = RecordPath.proxy
    package var originalDestination: SocketAddress?

    /// The action as logged: the proxy's own when it answered, else the decision's.
    package var loggedAction: String { action?.rawValue ?? decision?.action.rawValue ?? "allow" }

    /// The reason code as logged, if any.
    package var loggedReason: String? { reason?.rawValue ?? decision?.reason?.rawValue }

    /// The rule as logged: the TLS-level rule that decided, else the policy lookup's; none for a block
    /// by one of the proxy's own rules (a port, a client, a login, the destination ACL), which no ATS
    /// rule decided (the lookup's would only say why ATS allowed the destination), nor for the device's
    /// own fetch, which no app's ATS judged.
    package var loggedRule: String? {
        if action == .block || reason == .systemFetch || reason == .systemTraffic, let reason, !reason.isATSRule { return nil }
        return rule?.rawValue ?? decision?.rule
    }

    /// Hands the record's fields, in INTERFACE.md's order, to `fields`: the one list that the JSON
    /// line, the journal entry and the tests all read. A nil value is written as null; the fields
    /// that only some records have are not handed over at all when absent.
    package func visit<Fields: LogFieldVisitor>(policy: String, _ fields: inout Fields) {
        let destination = decision?.destination ?? target
        fields.time("time", time)
        // This process's run (RunLedger.swift): which run a record belongs to, for the report.
        fields.string("run", LogRun.id)
        fields.address("client", client)
        fields.string("policy", unrouted ? nil : self.policy ?? policy)
        fields.string("method", method)
        fields.string("scheme", destination?.scheme.rawValue)
        fields.host("host", destination?.host)
        fields.int("port", destination?.port)
        fields.string("class", destination?.hostClass.rawValue)
        fields.bool("direct", decision?.direct)
        fields.string("exception", decision?.exception?.entry.displayName)
        fields.string("ats", decision?.ats.rawValue)
        fields.string("action", loggedAction)
        fields.string("reason", loggedReason)
        fields.string("message", message ?? decision?.message)
        fields.bool("enforced", enforced)
        fields.string("tls_version", tlsVersion)
        fields.string("cipher", cipher)
        fields.ip("upstream_ip", upstreamIP)
        fields.int("bytes_up", bytesUp)
        fields.int("bytes_down", bytesDown)
        fields.milliseconds("duration_ms", durationMilliseconds)
        fields.string("app", app)
        fields.string("route", route?.rawValue)
        fields.string("user_agent", userAgent)
        fields.string("proxy_user", proxyUser)
        fields.string("device", device)
        if let dnsMilliseconds { fields.milliseconds("dns_ms", dnsMilliseconds) } else { fields.string("dns_ms", nil) }
        fields.bool("dns_cached", dnsCached)
        fields.string("parent", parent)
        fields.string("path", path.rawValue)
        fields.string("original_dst", originalDestination?.description)
        if dnsStale { fields.bool("dns_stale", true) }
        if let status { fields.int("status", status) }
        if let sni { fields.string("sni", sni) }
        if let keyExchange {
            fields.string("key_exchange", keyExchange.group?.name)
            fields.bool("pq_offered", keyExchange.postQuantumOffered)
        }
        if clientTLS { fields.bool("client_tls", true) }
        if let clientRefusal {
            fields.string("client_alert", clientRefusal.alertName)
            fields.string("pinned_domain", clientRefusal.pinnedDomain)
        }
        if let certificate {
            fields.string("cert_subject", certificate.subject)
            fields.string("cert_issuer", certificate.issuer)
            fields.string("cert_key", certificate.key)
            fields.string("cert_signature", certificate.signatureAlgorithm)
        }
        if !toleratedFindings.isEmpty { fields.strings("cert_tolerated", toleratedFindings) }
        if let certificateDepth { fields.int("certificate_depth", certificateDepth) }
        if certificate != nil || aiaFetched != nil { fields.string("aia_fetched", aiaFetched) }
        if let rule = loggedRule { fields.string("rule", rule) }
        if let minimum = decision?.requirements.minimumTLSVersion { fields.string("minimum_tls_version", minimum.rawValue) }
    }

    /// The record as a JSON object (what a JSON line holds).
    package func json(policy: String) -> JSONValue {
        var object = JSONObjectFields()
        visit(policy: policy, &object)
        return .object(object.fields)
    }

    /// The text log's line; `run` (the text sink's) is said after the counts, the journal's MESSAGE
    /// leaves it to its ATS_RUN field.
    package func text(policy: String, run: String? = nil) -> String {
        let target = (decision?.destination ?? self.target).map { "\($0.scheme.rawValue)://\($0.host):\($0.port)" } ?? "-"
        let verdict = loggedAction
        let code = loggedReason
        var line = "\(DecisionRecord.timestamp(time)) \(client)"
        if clientTLS { line += " tls" }
        if path != .proxy { line += " \(path.rawValue)" }
        if let proxyUser { line += " user=\(proxyUser)" }
        if let device { line += " device=\(device)" }
        if let app { line += " app=\(app)" }
        line += " \(method) \(target)"
        if let originalDestination { line += " (to \(originalDestination))" }
        if let parent { line += " via \(parent)" }
        line += " \(verdict.uppercased())"
        if let code { line += " \(code)" }
        if !enforced { line += " (report only)" }
        if let tlsVersion { line += " \(tlsVersion)" }
        if let cipher { line += " \(cipher)" }
        line += " up=\(bytesUp) down=\(bytesDown) \(Int(durationMilliseconds))ms"
        if let run { line += " run=\(run)" }
        if let text = message ?? decision?.message {
            // One record, one line: a policy value with a newline must not split it.
            line += ": " + text.replacing("\n", with: "\\n")
        }
        return line
    }

    /// RFC 3339 UTC with milliseconds.
    static func timestamp(_ time: Double) -> String {
        var bytes: [UInt8] = []
        LogText.appendTimestamp(time, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension DecisionRecord {
    /// A record begun when a request (or a connection, before its first head) starts. (In an
    /// extension, so that the memberwise initializer the tests use stays.)
    package init(time: Double, client: SocketAddress, method: String) {
        self.init(time: time, client: client, method: method, decision: nil)
    }

    /// The record of a request that starts now (`method` "-" before a head is read).
    package static func begin(client: SocketAddress, method: String, time: Double = wallClock()) -> DecisionRecord {
        DecisionRecord(time: time, client: client, method: method)
    }

    /// The JSON fields as journald fields: `ATS_` and the name in upper case; nulls are left out.
    package func journalFields(policy: String) -> [(String, String)] {
        var object = JSONObjectFields()
        visit(policy: policy, &object)
        return object.journalFields
    }

    /// Blocks are warnings, upstream failures errors, the rest informational (syslog levels).
    package var priority: Int32 {
        switch loggedAction {
        case "block": 4
        case "error": 3
        default: 6
        }
    }
}

/// The ways a record changes on its way through a connection, each named for why.
extension DecisionRecord {
    /// A message when there is none yet: the first explanation stands.
    package mutating func note(_ text: String) {
        if message == nil { message = text }
    }

    /// Adds to the message, after what it says ("; " between).
    package mutating func appendNote(_ text: String) {
        message = (message.map { $0 + "; " } ?? "") + text
    }

    /// Puts `text` first in the message: what happened last says most.
    package mutating func prependNote(_ text: String) {
        message = text + (message.map { "; " + $0 } ?? "")
    }

    /// The request failed (action `error`) for `reason`; `message`, when given, replaces the record's.
    /// `keepingOutcome`: an action and a reason already recorded stay, only what is missing is filled
    /// (a stop ends a request that may have been decided already).
    package mutating func recordFailure(_ reason: Reason, message: String?, keepingOutcome: Bool = false) {
        action = keepingOutcome ? action ?? .error : .error
        self.reason = keepingOutcome ? self.reason ?? reason : reason
        if let message { self.message = message }
    }

    /// What a watched handshake showed: the client's SNI and key exchange offer, the server's
    /// version and cipher (the first ServerHello that is not a HelloRetryRequest).
    package mutating func noteHandshake(clientHello: ClientHello?, serverHello: ServerHello?, group: NamedGroup?) {
        if sni == nil, let clientHello { sni = clientHello.serverName }
        if let clientHello {
            keyExchange = KeyExchangeFacts(group: group, postQuantumOffered: clientHello.offersPostQuantum)
        }
        if tlsVersion == nil, let serverHello, !serverHello.isHelloRetryRequest {
            tlsVersion = TLSProtocolVersion.name(for: serverHello.negotiatedVersion)
            cipher = CipherSuite.name(for: serverHello.cipherSuite)
        }
    }

    /// The origin (or the parent proxy on the way to it) is connected: its address, and how long
    /// after the request head.
    package mutating func noteUpstream(address: SocketAddress, connectedAfter seconds: Double) {
        upstreamIP = address.ip
        connectedAfter = seconds
    }

    /// What the origin's name lookups said, added to what earlier attempts of this request said.
    package mutating func noteDNS(_ facts: DNSFacts) {
        if let waited = facts.waitedMilliseconds { dnsMilliseconds = max(dnsMilliseconds ?? 0, waited) }
        switch facts.cached {
        case false?: dnsCached = false
        case true?: if dnsCached == nil { dnsCached = true }
        case nil: break
        }
        if facts.stale { dnsStale = true }
    }
}

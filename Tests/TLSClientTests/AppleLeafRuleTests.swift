import ATSPolicy
import Foundation
import Testing
import TestSupport
import TLSClient

/// R15a and R16 on the certificates of make-pki.sh: the facts OpenSSL extracts reach the rules.
@Suite struct AppleLeafRuleTests {
    /// The test root as an operator's CA file; the "system" root as the whole system store.
    static func store() throws -> TrustStore {
        try TrustStore(caFiles: [try TestPKI.path("ca.pem")], systemRoots: [try TestPKI.path("system-ca.pem")])
    }

    static func verdict(_ leaf: String, requirements: Requirements = .full,
                        transparency: TransparencyCheck? = nil) throws -> CertificateVerdict {
        let chain = try TestPKI.chain(leaf)
        return CertificateEvaluator.evaluate(chain: chain, host: "localhost", requirements: requirements, pin: nil,
                                             store: try store(), transparency: transparency)
    }

    @Test("R15a lifetime and usage through real certificates", arguments: [
        ("life-800", [BlockReason]()),
        ("life-826", [.certificateLifetime]),
        ("life-1000", [.certificateLifetime]),
        ("eku-client", [.certificateUsage]),
        ("eku-none", []),
        ("eku-any", []),
        ("no-san", [.certificateHostname]),
        ("sys-365", []),
        ("sys-400", [.certificateLifetime]),
    ])
    func appleLeafRules(leaf: String, reasons: [BlockReason]) throws {
        let verdict = try Self.verdict(leaf)
        #expect(verdict.findings.map(\.reason) == reasons, "\(verdict.findings.map(\.message))")
        if !reasons.isEmpty {
            #expect(verdict.blockingFinding?.rule == .r15a)
        }
    }

    @Test func theAnchorSaysWhoseRootTheChainEndsAt() throws {
        #expect(try Self.verdict("good-rsa").anchor == .operator)
        #expect(try Self.verdict("sys-365").anchor == .system)
    }

    @Test func the398DayRuleNamesTheSystemStore() throws {
        let finding = try #require(try Self.verdict("sys-400").blockingFinding)
        #expect(finding.message.contains("is valid for 400 days"), "\(finding.message)")
        #expect(finding.message.contains("chains to a root of the system store may be valid for at most 398 days"))
        let operatorFinding = try #require(try Self.verdict("life-826").blockingFinding)
        #expect(operatorFinding.message.contains("at most 825 days"))
    }

    @Test func extendedKeyUsagesAreReadAsOIDs() throws {
        #expect(try Self.verdict("eku-client").leaf?.extendedKeyUsages == [ExtendedKeyUsage.clientAuth])
        #expect(try Self.verdict("eku-any").leaf?.extendedKeyUsages == [ExtendedKeyUsage.any])
        #expect(try Self.verdict("eku-none").leaf?.extendedKeyUsages == nil)
    }

    @Test func cleartextToleratesTheAppleLeafRules() throws {
        let verdict = try Self.verdict("life-1000", requirements: .none)
        #expect(verdict.blockingFinding == nil)
        #expect(verdict.toleratedFindings.map(\.reason) == [.certificateLifetime])
    }

    @Test("R16 counts the embedded SCTs of publicly trusted leaves", arguments: [
        ("sys-sct3", [BlockReason]()),
        ("sys-sct2", [.certificateTransparency]),
        ("sys-sct2-short", []),
        ("sys-365", [.certificateTransparency]),
        // An operator's CA: CT does not apply.
        ("good-rsa", []),
    ])
    func transparency(leaf: String, reasons: [BlockReason]) throws {
        let verdict = try Self.verdict(leaf, transparency: TransparencyCheck())
        #expect(verdict.findings.map(\.reason) == reasons, "\(verdict.findings.map(\.message))")
        #expect(verdict.facts.scts.allSatisfy { $0.verified == nil })
        // Off by default.
        #expect(try Self.verdict(leaf).findings.isEmpty)
    }

    @Test func embeddedSCTsCarryTheirLogIDs() throws {
        let verdict = try Self.verdict("sys-sct3", transparency: TransparencyCheck())
        #expect(verdict.facts.scts.map { $0.logID.first } == [1, 2, 3])
        #expect(verdict.facts.scts.allSatisfy { $0.source == .embedded && $0.logID.count == 32 })
    }
}

/// The R14 suites are written once, in ATSPolicy; the OpenSSL names derived from them must be what
/// OpenSSL calls those code points.
@Suite struct CipherSuiteTableTests {
    @Test func openSSLNamesMatchOpenSSLsOwnTable() throws {
        // OpenSSL enables three TLS 1.3 suites by default; name all five so the CCM ones are listed too.
        let tls13 = R14CipherSuites.all.filter { $0.group == .tls13 }.map(\.openSSLName).joined(separator: ":")
        let run = try Shell.run("/usr/bin/openssl", ["ciphers", "-V", "-ciphersuites", tls13,
                                                     "ALL:COMPLEMENTOFALL:@SECLEVEL=0"])
        #expect(run.status == 0, "\(run.stderr)")
        // "0xC0,0x2F - ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 Kx=ECDH ..."
        var names: [UInt16: String] = [:]
        for line in run.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 2, fields[1] == "-" else { continue }
            let bytes = fields[0].split(separator: ",").compactMap { UInt8($0.dropFirst(2), radix: 16) }
            guard bytes.count == 2 else { continue }
            names[UInt16(bytes[0]) << 8 | UInt16(bytes[1])] = String(fields[2])
        }
        for entry in R14CipherSuites.all {
            #expect(names[entry.code] == entry.openSSLName, "0x\(String(entry.code, radix: 16)) \(entry.ianaName)")
        }
    }
}

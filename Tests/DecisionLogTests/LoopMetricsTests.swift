import POSIX
import Testing
import TLSWire
@testable import DecisionLog

@Suite struct LoopMetricsTests {
    private static func record(app: String? = nil, keyExchange: KeyExchangeFacts?) -> DecisionRecord {
        var record = DecisionRecord(time: 0, client: SocketAddress(ip: .v4(0x7F00_0001), port: 40000), method: "CONNECT")
        record.app = app
        record.keyExchange = keyExchange
        return record
    }

    @Test func theMetricsCountKeyExchangesByAppGroupAndOffer() {
        let hybrid = Self.record(app: "com.example.lab",
                                 keyExchange: KeyExchangeFacts(group: .x25519MLKEM768, postQuantumOffered: true))
        let rsa = Self.record(keyExchange: KeyExchangeFacts(group: nil, postQuantumOffered: false))
        let noHandshake = Self.record(app: "com.example.lab", keyExchange: nil)
        var metrics = LoopMetrics()
        for record in [hybrid, rsa, noHandshake, hybrid] { metrics.count(record) }
        #expect(metrics.keyExchanges == [
            LoopMetrics.KeyExchangeKey(app: "com.example.lab", group: .x25519MLKEM768, postQuantumOffered: true): 2,
            LoopMetrics.KeyExchangeKey(app: "", group: nil, postQuantumOffered: false): 1,
        ])
        var total = LoopMetrics()
        total.add(metrics)
        total.add(metrics)
        #expect(total.keyExchanges.values.reduce(0, +) == 6)
    }
}

import ATSPolicy
import POSIX
import Testing
@testable import Inspection

/// The pure halves of the transparent path's arrival: which addresses are the proxy's own listeners
/// (where a transparent connection must never go), and whether a server name resolves to the address
/// a connection was going to. (Reading SO_ORIGINAL_DST is the gateway lab's, in CLITests.)
@Suite struct TransparentArrivalTests {
    static func address(_ text: String) -> SocketAddress { SocketAddress(parsing: text)! }
    static func ip(_ text: String) -> IPAddress { address(text.contains(":") ? "[\(text)]:1" : text + ":1").ip }

    @Test func aListenerIsItsAddressAndPortAndAWildcardOneEveryOwnAddress() {
        let own: Set<IPAddress> = [Self.address("198.18.1.1:0").ip, Self.address("[fd00:18:1::1]:0").ip]
        let listeners = [Self.address("127.0.0.1:3128"), Self.address("0.0.0.0:3130"), Self.address("[::]:3131")]
        func isListener(_ text: String) -> Bool {
            TransparentArrival.isListener(Self.address(text), among: listeners, ownAddresses: own)
        }
        #expect(isListener("127.0.0.1:3128"))
        #expect(!isListener("127.0.0.2:3128"), "another address on the same port")
        #expect(isListener("198.18.1.1:3130"))
        #expect(!isListener("198.18.2.2:3130"), "0.0.0.0 is the host's own addresses, not the origin's")
        #expect(!isListener("[fd00:18:1::1]:3130"), "0.0.0.0 listens on IPv4 only")
        #expect(isListener("[fd00:18:1::1]:3131") && isListener("198.18.1.1:3131"), ":: listens on both families")
        #expect(!isListener("198.18.1.1:443"))
    }

    @Test func aServerNameMatchesWhenAnyAnswerHoldsTheAddress() {
        var check = ServerNameCheck(name: "api.example.com", address: Self.ip("198.18.2.2"), answers: 2)
        #expect(check.add(.success([Self.ip("198.18.2.2")])) == "", "the first family's answer settles it")
        #expect(!check.waiting)
        #expect(check.add(.success([])) == nil, "later answers change nothing")

        var late = ServerNameCheck(name: "api.example.com", address: Self.ip("fd00:18:2::2"), answers: 2)
        #expect(late.add(.success([Self.ip("198.18.2.2")])) == nil)
        #expect(late.add(.success([Self.ip("fd00:18:2::2")])) == "")
    }

    @Test func aMismatchSaysWhatTheNameResolvesTo() {
        var check = ServerNameCheck(name: "bank.example.com", address: Self.ip("198.18.2.2"), answers: 2)
        #expect(check.add(.success([Self.ip("198.18.9.9")])) == nil)
        #expect(check.add(.failure(.init("NODATA"))) == "the TLS server name bank.example.com resolves to 198.18.9.9, not to "
                + "the connection's original destination 198.18.2.2")

        var nothing = ServerNameCheck(name: "gone.example", address: Self.ip("198.18.2.2"), answers: 1)
        #expect(nothing.add(.failure(.init("NXDOMAIN"))) == "the TLS server name gone.example resolves to no address (NXDOMAIN), "
                + "not to the connection's original destination 198.18.2.2")
    }
}

import ATSPolicy
import Testing
@testable import ProxyAccess

/// `--device NAME=CIDR|user:NAME`: what parses, and the first match naming the device.
@Suite struct DeviceTableTests {
    static func table(_ texts: [String]) throws -> DeviceTable {
        DeviceTable(try texts.map { try Device.parse($0).get() })
    }

    static func ip(_ text: String) -> IPAddress { IPAddress.parseStrict(Substring(text))! }

    @Test func cidrsAddressesAndUsersParse() throws {
        let table = try Self.table(["phone=10.0.0.7", "ipad=user:ann", "lab=10.0.0.0/8", "v6=fd00::/8", "iPhone 15 (lab 3)=user:x=y"])
        #expect(table.devices.map(\.name) == ["phone", "ipad", "lab", "v6", "iPhone 15 (lab 3)"])
        #expect(table.devices[0].rule == .client(IPNetwork(address: Self.ip("10.0.0.7"), prefixLength: 32)))
        #expect(table.devices[1].rule == .user("ann"))
        #expect(table.devices[4].rule == .user("x=y"), "the name ends at the first =")
    }

    @Test func theFirstMatchWinsAndNoMatchIsNoDevice() throws {
        let table = try Self.table(["phone=10.0.0.7", "ipad=user:ann", "lab=10.0.0.0/8"])
        #expect(table.name(client: Self.ip("10.0.0.7"), user: "ann") == "phone")
        #expect(table.name(client: Self.ip("10.0.0.8"), user: "ann") == "ipad")
        #expect(table.name(client: Self.ip("10.0.0.8"), user: nil) == "lab")
        #expect(table.name(client: Self.ip("192.168.1.1"), user: "bob") == nil)
        #expect(DeviceTable().name(client: Self.ip("10.0.0.7"), user: nil) == nil)
    }

    @Test(arguments: [("phone", "expected NAME=CIDR"), ("=10.0.0.1", "non-empty"), (" phone=10.0.0.1", "surrounding spaces"),
                      ("ph\u{7}one=10.0.0.1", "control characters"), ("phone=user:", "user: needs a user name"),
                      ("phone=10.0.0.0/33", "neither a CIDR"), ("phone=port:80", "neither a CIDR")])
    func badValuesSayWhy(text: String, words: String) {
        guard case .failure(let error) = Device.parse(text) else { return #expect(Bool(false), "\(text) parsed") }
        #expect(error.description.hasPrefix("--device \(text): ") && error.description.contains(words), "\(error)")
    }
}

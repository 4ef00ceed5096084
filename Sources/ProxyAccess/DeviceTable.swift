import ATSPolicy

/// One `--device NAME=CIDR|user:NAME`: the lab's name for the phone (or simulator) behind a client
/// address range or a proxy user.
public struct Device: Sendable, Equatable {
    public var name: String
    /// `.client(network)` or `.user(name)`: the route rules' matchers, of which a device takes these two.
    public var rule: RouteRule

    /// Parses `NAME=CIDR`, `NAME=ADDRESS` or `NAME=user:USER`; the error says which part is wrong.
    public static func parse(_ text: String) -> Result<Device, DeviceError> {
        guard let equals = text.firstIndex(of: "=") else {
            return .failure(DeviceError(text: text, problem: "expected NAME=CIDR or NAME=user:USER"))
        }
        let name = String(text[..<equals])
        let value = text[text.index(after: equals)...]
        guard !name.isEmpty, name.first != " ", name.last != " ",
              !name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            return .failure(DeviceError(text: text, problem: "the device name must be non-empty, without control characters "
                                            + "or surrounding spaces"))
        }
        let rule = value.hasPrefix("user:") ? RouteRule(parsing: value) : RouteRule(parsing: Substring("client:" + value))
        switch rule {
        case .user?, .client?:
            return .success(Device(name: name, rule: rule!))
        default:
            return .failure(DeviceError(text: text, problem: value.hasPrefix("user:") ? "user: needs a user name"
                                            : "'\(value)' is neither a CIDR (10.0.0.0/8), an address nor user:NAME"))
        }
    }
}

/// Why a `--device` value cannot be read.
public struct DeviceError: Error, Sendable, CustomStringConvertible {
    public var text: String
    public var problem: String

    public var description: String { "--device \(text): \(problem)" }
}

/// The lab's devices, tried in order: the first whose rule matches names the request's device (the
/// records' `device`, the metrics' `device` label); none matches: no device.
public struct DeviceTable: Sendable, Equatable {
    public var devices: [Device]

    public init(_ devices: [Device] = []) {
        self.devices = devices
    }

    public var isEmpty: Bool { devices.isEmpty }

    /// The name of the first device that matches the client's address or its verified proxy user.
    package func name(client: IPAddress, user: String?) -> String? {
        devices.first { $0.rule.matches(user: user, client: client, port: 0, product: nil) }?.name
    }
}

/// Reads a client's side of a TLS connection at the record layer, to see how it answered the server's
/// first flight (its Certificate): whether it went on with its handshake, or refused with an alert.
///
/// Only record headers are read (and the two bytes of a plaintext alert); everything else is
/// skipped as it passes, so memory stays at a few bytes whatever the client sends. It is fed the
/// whole client stream from its first byte, to keep its place among the records, and `arm`ed once
/// the server's flight has been passed to the client: only a record that begins after that is an
/// answer. What each version shows:
/// - TLS 1.2 and below: a plaintext alert (a refusal, named), or the client's ChangeCipherSpec
///   (it went on to its Finished).
/// - TLS 1.3: the client's handshake is encrypted once it has read the ServerHello. Some stacks
///   (OpenSSL) still send an alert in the clear before they switch keys; others (BoringSSL: Chrome,
///   Apple's) encrypt it. An encrypted alert is told by its size: 2 bytes of alert and 1 of inner
///   content type, sealed with the suite's tag (16 bytes, 8 for AES-CCM-8), is a 19-byte record (11),
///   where the smallest Finished is 53. Its name cannot be seen. A compatibility ChangeCipherSpec is
///   skipped. A client that pads its records (none of the common stacks does by default) is read
///   as going on.
public struct ClientAnswerReader: Sendable {
    /// How the client answered the server's flight.
    public enum Answer: Equatable, Sendable {
        /// It went on: its ChangeCipherSpec (TLS 1.2), its first encrypted handshake record (TLS 1.3),
        /// or data.
        case accepted
        /// A plaintext alert, readable.
        case alert(TLSAlert)
        /// TLS 1.3: an encrypted record of an alert's size before anything else of its second flight.
        case encryptedAlert
        /// Bytes that are not TLS records: nothing can be said.
        case unreadable
    }

    private var version: UInt16?
    /// The record length of an encrypted alert under the negotiated suite (TLS 1.3).
    private var sealedAlertLength = 19
    private var armed = false
    private var header: [UInt8] = []
    /// The current record is an alert whose two bytes are being read.
    private var readingAlert = false
    private var alertBytes: [UInt8] = []
    /// Bytes of the current record still to pass over.
    private var skipping = 0
    public private(set) var answer: Answer?

    public init() {}

    /// The server's flight, with the negotiated version and cipher suite, has reached the client:
    /// from the next record on, what the client sends is its answer.
    public mutating func arm(version: UInt16, cipherSuite: UInt16) {
        self.version = version
        // TLS_AES_128_CCM_8_SHA256 seals with an 8-byte tag; the other TLS 1.3 suites with 16.
        sealedAlertLength = 2 + 1 + (cipherSuite == 0x1305 ? 8 : 16)
        armed = true
    }

    public var isArmed: Bool { armed }

    /// Takes the client's next bytes; returns the answer once they show it (and then every call
    /// returns it without reading).
    @discardableResult
    public mutating func feed<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Answer? {
        var index = bytes.startIndex
        while answer == nil, index != bytes.endIndex {
            if skipping > 0 {
                let step = min(skipping, bytes.distance(from: index, to: bytes.endIndex))
                skipping -= step
                index = bytes.index(index, offsetBy: step)
                continue
            }
            if readingAlert {
                alertBytes.append(bytes[index])
                index = bytes.index(after: index)
                if alertBytes.count == 2 {
                    answer = .alert(TLSAlert(level: AlertLevel(rawValue: alertBytes[0]),
                                             description: AlertDescription(rawValue: alertBytes[1])))
                }
                continue
            }
            header.append(bytes[index])
            index = bytes.index(after: index)
            if header.count == TLSHandshakeReader.headerLength { record() }
        }
        return answer
    }

    /// A record header is whole: pass over the record, or take it as the answer.
    private mutating func record() {
        defer { header.removeAll(keepingCapacity: true) }
        do {
            try TLSHandshakeReader.checkHeader(header[...])
        } catch {
            answer = .unreadable
            return
        }
        let record = RecordHeader(header)
        skipping = record.length
        guard armed, let version else { return }
        switch record.type {
        case .alert where record.length == 2:
            readingAlert = true
            skipping = 0
        case .alert:
            // Sealed alerts travel as application_data in TLS 1.3, and after the ChangeCipherSpec in
            // TLS 1.2: an alert record of another length here is no alert this reader can name.
            answer = .unreadable
        case .changeCipherSpec where version >= TLSProtocolVersion.tls13:
            break // the compatibility ChangeCipherSpec (RFC 8446 D.4)
        case .changeCipherSpec:
            answer = .accepted
        case .applicationData where version >= TLSProtocolVersion.tls13:
            answer = record.length == sealedAlertLength ? .encryptedAlert : .accepted
        case .applicationData, .heartbeat:
            answer = .accepted
        case .handshake:
            break // TLS 1.2's ClientKeyExchange, a client certificate: the answer is still to come
        }
    }
}

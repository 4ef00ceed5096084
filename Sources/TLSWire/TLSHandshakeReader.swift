/// Reads one direction of a TLS connection as it arrives, in chunks of any size: splits the records and
/// reassembles the plaintext handshake messages, however they are split across or packed into records.
///
/// It reads only what travels in the clear. The first ChangeCipherSpec, alert, application_data or
/// heartbeat record ends that: the reader records which (`sawNonHandshakeRecord`, and `alert` for a
/// plaintext alert) and ignores every later byte, since what follows is encrypted (TLS 1.2's Finished
/// even travels in a handshake record). The one exception is TLS 1.3's middlebox-compatibility
/// ChangeCipherSpec after a HelloRetryRequest (RFC 8446 section D.4), which is skipped because a
/// plaintext ServerHello or ClientHello follows it; see `serverSentHelloRetryRequest()`.
///
/// Memory is bounded by one record plus one handshake message (`maximumMessageLength`, or
/// `maximumCertificateMessageLength` for a Certificate). Bytes that are not TLS throw `TLSWireError`;
/// once thrown, every later `feed` throws the same error.
public struct TLSHandshakeReader: Sendable {
    /// The longest record any TLS version allows: 2^14 bytes of plaintext plus 2048 of expansion
    /// (RFC 5246 section 6.2.3; TLS 1.3 allows less).
    public static let maximumRecordLength = 16_384 + 2_048
    /// Certificate chains run to 10-20 KiB, post-quantum ClientHellos to a few; 64 KiB leaves room.
    public static let defaultMaximumMessageLength = 65_536
    /// What Apple's TLS stack takes for the server's Certificate message: BoringSSL's
    /// SSL_MAX_CERT_LIST_DEFAULT (100 KiB), the library Network.framework's TLS is built on. A larger
    /// chain (badssl's 10000-sans: 212 KB) fails the device's handshake, and the reader's error says so.
    public static let defaultMaximumCertificateMessageLength = 102_400

    static let headerLength = 5

    public let maximumMessageLength: Int
    /// The limit for a Certificate message.
    public let maximumCertificateMessageLength: Int
    /// The non-handshake record that ended the plaintext handshake, or nil while it goes on.
    public private(set) var sawNonHandshakeRecord: ContentType?
    /// The alert, when that record was a plaintext alert of the usual 2 bytes.
    public private(set) var alert: TLSAlert?
    /// The version of the first record header: what an alert to this direction's peer should carry.
    public private(set) var firstRecordVersion: UInt16?

    /// A record not yet complete, header first.
    private var record: [UInt8] = []
    /// Handshake bytes not yet forming a whole message.
    private var message: [UInt8] = []
    private var skipsChangeCipherSpec = false
    /// A whole handshake message has been read (a HelloRetryRequest can only answer one).
    private var readAMessage = false
    private var failure: TLSWireError?

    public init(maximumMessageLength: Int = TLSHandshakeReader.defaultMaximumMessageLength,
                maximumCertificateMessageLength: Int = TLSHandshakeReader.defaultMaximumCertificateMessageLength) {
        self.maximumMessageLength = maximumMessageLength
        self.maximumCertificateMessageLength = max(maximumMessageLength, maximumCertificateMessageLength)
    }

    /// Takes the next bytes of the stream; returns the handshake messages they complete, in order.
    /// Incomplete input returns `[]` and waits for more; after the handshake's plaintext ends, every
    /// call returns `[]`. A call that throws returns none of the messages its bytes completed.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(TLSWireError) -> [HandshakeMessage] {
        if let failure { throw failure }
        var messages: [HandshakeMessage] = []
        do throws(TLSWireError) {
            var input = bytes[...]
            while sawNonHandshakeRecord == nil && !input.isEmpty {
                if record.isEmpty {
                    // The usual case: whole records straight from the caller's buffer, without a copy.
                    try Self.checkHeader(input.prefix(Self.headerLength))
                    if input.count >= Self.headerLength {
                        let header = RecordHeader(input)
                        if try endsAtHeader(header) { break }
                        let end = input.startIndex + Self.headerLength + header.length
                        if input.count >= Self.headerLength + header.length {
                            try process(header, payload: input[(input.startIndex + Self.headerLength)..<end],
                                        into: &messages)
                            input = input[end...]
                            continue
                        }
                    }
                    record.append(contentsOf: input)
                    break
                }
                if record.count < Self.headerLength {
                    let take = min(Self.headerLength - record.count, input.count)
                    record.append(contentsOf: input.prefix(take))
                    input = input.dropFirst(take)
                    try Self.checkHeader(record[...])
                    if record.count < Self.headerLength { break }
                    if try endsAtHeader(RecordHeader(record)) { break }
                }
                let header = RecordHeader(record)
                let take = min(Self.headerLength + header.length - record.count, input.count)
                record.append(contentsOf: input.prefix(take))
                input = input.dropFirst(take)
                guard record.count == Self.headerLength + header.length else { break }
                try process(header, payload: record[Self.headerLength...], into: &messages)
                record.removeAll(keepingCapacity: true)
            }
        } catch {
            failure = error
            record = []
            message = []
            throw error
        }
        if sawNonHandshakeRecord != nil {
            record = []
            message = []
        }
        return messages
    }

    /// `feed` for bytes in an array.
    public mutating func feed(_ bytes: [UInt8]) throws(TLSWireError) -> [HandshakeMessage] {
        // withUnsafeBytes rethrows untyped; carry the typed result out instead.
        let result: Result<[HandshakeMessage], TLSWireError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(TLSWireError) in try feed(buffer) }
        }
        return try result.get()
    }

    /// Tells the client-direction reader that the server answered with a HelloRetryRequest: the
    /// client's next ChangeCipherSpec is TLS 1.3's compatibility one, and a second ClientHello follows
    /// it. (The server-direction reader notices a HelloRetryRequest by itself.) Has no effect once
    /// the reader has stopped, which happens for a client that sent its ChangeCipherSpec right after
    /// the first ClientHello. Only a ChangeCipherSpec after a message is skipped: a HelloRetryRequest
    /// answers a ClientHello (RFC 8446 section 4.1.4), and a ChangeCipherSpec before the first one is
    /// no compatibility record (section 5) but the end of the plaintext, as the first look
    /// (`looksLikeTLS`) also sees it. (The fuzzer found the reader skipping one.)
    public mutating func serverSentHelloRetryRequest() {
        skipsChangeCipherSpec = true
    }

    /// Whether the first bytes of a stream can be the start of a ClientHello: a handshake record
    /// (22), version 3.x, and, once there, handshake type client_hello (1). Decides from as many of
    /// the first 6 bytes as there are; false for no bytes.
    public static func looksLikeTLS(firstBytes bytes: UnsafeRawBufferPointer) -> Bool {
        guard let first = bytes.first, first == ContentType.handshake.rawValue else { return false }
        if bytes.count > 1 && bytes[1] != 3 { return false }
        if bytes.count > 2 && bytes[2] > 4 { return false }
        if bytes.count > 5 && bytes[5] != HandshakeType.clientHello.rawValue { return false }
        return true
    }

    /// `looksLikeTLS` for bytes in an array.
    public static func looksLikeTLS(firstBytes bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { looksLikeTLS(firstBytes: $0) }
    }

    // MARK: - Records

    /// Checks as much of a record header as has arrived, so garbage fails on its first byte.
    static func checkHeader<Bytes: Collection<UInt8>>(_ header: Bytes) throws(TLSWireError) {
        var index = header.startIndex
        guard index != header.endIndex else { return }
        let type = header[index]
        guard ContentType(rawValue: type) != nil else { throw .unknownContentType(type) }
        guard header.count >= 3 else { return }
        index = header.index(after: index)
        let version = UInt16(header[index]) << 8 | UInt16(header[header.index(after: index)])
        guard version >> 8 == 3, version & 0xFF <= 4 else { throw .unsupportedRecordVersion(version) }
        guard header.count >= headerLength else { return }
        let length = RecordHeader(header).length
        guard length <= maximumRecordLength else { throw .recordTooLong(length: length) }
    }

    /// Handles a header whose record need not be read: application_data and heartbeat end the
    /// plaintext handshake whatever they hold (there is no point buffering up to 18 KiB of ciphertext).
    private mutating func endsAtHeader(_ header: RecordHeader) throws(TLSWireError) -> Bool {
        if firstRecordVersion == nil { firstRecordVersion = header.version }
        switch header.type {
        case .applicationData, .heartbeat:
            try stop(header.type)
            return true
        case .handshake, .changeCipherSpec, .alert:
            return false
        }
    }

    private mutating func process<Payload: Collection<UInt8>>(
        _ header: RecordHeader, payload: Payload, into messages: inout [HandshakeMessage]
    ) throws(TLSWireError) {
        switch header.type {
        case .handshake:
            message.append(contentsOf: payload)
            try extractMessages(into: &messages)
        case .changeCipherSpec where skipsChangeCipherSpec && readAMessage && message.isEmpty:
            guard payload.count == 1, payload.first == 1 else {
                throw .malformed(message: "ChangeCipherSpec", reason: "a compatibility record must be the single byte 0x01")
            }
            skipsChangeCipherSpec = false
        case .changeCipherSpec, .applicationData, .heartbeat:
            try stop(header.type)
        case .alert:
            try stop(header.type)
            // Any other length is not a plaintext alert; the record still ends the handshake.
            if payload.count == 2 {
                alert = TLSAlert(level: AlertLevel(rawValue: payload[payload.startIndex]),
                                 description: AlertDescription(rawValue: payload[payload.index(after: payload.startIndex)]))
            }
        }
    }

    private mutating func stop(_ type: ContentType) throws(TLSWireError) {
        // RFC 8446 section 5.1: handshake messages must not be interleaved with other record types.
        guard message.isEmpty else { throw .interleavedRecord(type) }
        sawNonHandshakeRecord = type
    }

    // MARK: - Handshake messages

    private mutating func extractMessages(into messages: inout [HandshakeMessage]) throws(TLSWireError) {
        var offset = 0
        while message.count - offset >= 4 {
            let type = HandshakeType(rawValue: message[offset])
            let length = Int(message[offset + 1]) << 16 | Int(message[offset + 2]) << 8 | Int(message[offset + 3])
            let limit = type == .certificate ? maximumCertificateMessageLength : maximumMessageLength
            guard length <= limit else {
                throw .handshakeMessageTooLong(type: type, length: length, limit: limit)
            }
            guard message.count - offset - 4 >= length else { break }
            let body = Array(message[(offset + 4)..<(offset + 4 + length)])
            if type == .serverHello && ServerHello.isHelloRetryRequest(body: body) {
                skipsChangeCipherSpec = true
            }
            messages.append(HandshakeMessage(type: type, body: body))
            readAMessage = true
            offset += 4 + length
        }
        if offset == message.count {
            message.removeAll(keepingCapacity: true)
        } else if offset > 0 {
            message.removeFirst(offset)
        }
    }
}

/// The 5-byte header of a TLS record (RFC 8446 section 5.1), once checked.
struct RecordHeader {
    var type: ContentType
    var version: UInt16
    var length: Int

    /// Reads the first 5 bytes; `TLSHandshakeReader.checkHeader` has vouched for them.
    init<Bytes: Collection<UInt8>>(_ bytes: Bytes) {
        var index = bytes.startIndex
        func next() -> UInt8 {
            defer { index = bytes.index(after: index) }
            return bytes[index]
        }
        type = ContentType(rawValue: next()) ?? .handshake
        version = UInt16(next()) << 8 | UInt16(next())
        length = Int(next()) << 8 | Int(next())
    }
}

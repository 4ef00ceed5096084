/// What one UDP datagram of Initial packets told the QUIC Initial reader.
public enum QUICInitialReading: Sendable, Equatable {
    /// The datagram completed a ClientHello.
    case clientHello(QUICClientHello)
    /// Valid Initial packets whose ClientHello is not whole yet: the rest comes in later datagrams.
    case incomplete(QUICInitialProgress)
    /// An Initial of an attempt whose ClientHello was already read (a retransmission, or the rest of
    /// a coalesced flight); it was not decrypted again.
    case alreadyRead(version: QUICVersion, destinationConnectionID: QUICConnectionID)
}

/// A client's ClientHello read from its QUIC Initial packets.
public struct QUICClientHello: Sendable, Equatable {
    public var version: QUICVersion
    /// The connection ID the client chose for the server, from which the Initial keys come.
    public var destinationConnectionID: QUICConnectionID
    public var sourceConnectionID: QUICConnectionID
    public var clientHello: ClientHello
    /// The Initial packets whose CRYPTO frames made up the ClientHello (1 when it fitted in one).
    public var packets: Int

    public init(version: QUICVersion, destinationConnectionID: QUICConnectionID, sourceConnectionID: QUICConnectionID,
                clientHello: ClientHello, packets: Int) {
        self.version = version
        self.destinationConnectionID = destinationConnectionID
        self.sourceConnectionID = sourceConnectionID
        self.clientHello = clientHello
        self.packets = packets
    }

    /// The server_name the client asked for, as sent, or nil without one.
    public var serverName: String? { clientHello.serverName }
    public var alpnProtocols: [String] { clientHello.alpnProtocols }
    public var supportedGroups: [NamedGroup] { clientHello.supportedGroups }
}

/// An attempt whose ClientHello is still partial.
public struct QUICInitialProgress: Sendable, Equatable {
    public var version: QUICVersion
    public var destinationConnectionID: QUICConnectionID
    /// Bytes of the CRYPTO stream held, gaps included.
    public var bufferedBytes: Int
    /// Initial packets read for the attempt so far.
    public var packets: Int

    public init(version: QUICVersion, destinationConnectionID: QUICConnectionID, bufferedBytes: Int, packets: Int) {
        self.version = version
        self.destinationConnectionID = destinationConnectionID
        self.bufferedBytes = bufferedBytes
        self.packets = packets
    }
}

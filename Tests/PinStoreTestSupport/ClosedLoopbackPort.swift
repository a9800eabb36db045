import CPinStoreTestSupport

/// A port on 127.0.0.1 that refuses connections for as long as this value lives.
///
/// A socket is bound to it and never listens, so a connection is refused and no other process
/// can take the port meanwhile. A port freed by stopping a server can be taken by anyone on a
/// busy machine before the test connects (a "closed port" test once connected).
package final class ClosedLoopbackPort: Sendable {
    /// The port number.
    package let port: Int
    private let descriptor: Int32

    package struct SocketError: Error {}

    package init() throws {
        var port: Int32 = 0
        let descriptor = CPinStoreTestSupport_closedPort(&port)
        guard descriptor >= 0 else { throw SocketError() }
        self.descriptor = descriptor
        self.port = Int(port)
    }

    deinit {
        CPinStoreTestSupport_close(descriptor)
    }
}

/// A port on 127.0.0.1 that accepts TCP connections into its backlog and never answers: a
/// TLS handshake to it hangs until the client gives up. Open for as long as this value lives.
package final class SilentLoopbackListener: Sendable {
    /// The port number.
    package let port: Int
    private let descriptor: Int32

    package init() throws {
        var port: Int32 = 0
        let descriptor = CPinStoreTestSupport_silentListener(&port)
        guard descriptor >= 0 else { throw ClosedLoopbackPort.SocketError() }
        self.descriptor = descriptor
        self.port = Int(port)
    }

    deinit {
        CPinStoreTestSupport_close(descriptor)
    }
}

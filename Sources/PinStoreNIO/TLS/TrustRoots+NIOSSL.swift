import NIOSSL
import PinStore

extension TLSConfiguration {
    /// `roots` as swift-nio-ssl's trust settings: the system store (`.default`), the anchors
    /// alone (`.certificates`), or the system store with the anchors added. swift-nio-ssl checks
    /// the chain up to a self-signed anchor, so an intermediate given as an anchor, which the
    /// OpenSSL evaluation of the other adapters accepts, does not end a chain here: this can
    /// only refuse more.
    package mutating func setTrustRoots(_ roots: TrustRoots) throws {
        let anchors = try roots.anchors.map { try NIOSSLCertificate(bytes: Array($0.derRepresentation), format: .der) }
        switch (roots.includesSystemStore, anchors.isEmpty) {
        case (true, true):
            trustRoots = .default
        case (true, false):
            trustRoots = .default
            additionalTrustRoots = [.certificates(anchors)]
        case (false, _):
            trustRoots = .certificates(anchors)
            additionalTrustRoots = []
        }
    }
}

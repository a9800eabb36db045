import Foundation
internal import COpenSSL

/// The trust anchors a presented chain must lead to.
///
/// ```swift
/// let system = TrustRoots.system                                   // the OS trust store
/// let privateCA = TrustRoots.anchors([caCertificate])              // these anchors only
/// let both = TrustRoots.anchors([caCertificate], includingSystem: true)
/// ```
///
/// With caller-supplied anchors, an anchor may be any certificate of the chain, not only a
/// self-signed root: a private intermediate or a self-signed server certificate works.
public struct TrustRoots: Sendable {
    /// The anchors given by the caller (empty for ``system``).
    public let anchors: [X509Certificate]
    /// Whether the system trust store (OpenSSL's default paths) also counts.
    public let includesSystemStore: Bool
    let store: TrustStore

    /// The system trust store only (OpenSSL's default certificate file and directory).
    public static let system = TrustRoots(anchors: [], includingSystem: true)

    /// The given anchors, plus the system store when `includingSystem` is true.
    public static func anchors(_ anchors: [X509Certificate], includingSystem: Bool = false) -> TrustRoots {
        TrustRoots(anchors: anchors, includingSystem: includingSystem)
    }

    private init(anchors: [X509Certificate], includingSystem: Bool) {
        self.anchors = anchors
        self.includesSystemStore = includingSystem
        self.store = TrustStore(anchors: anchors, includingSystem: includingSystem)
    }
}

/// Owns one `X509_STORE`, built once and shared by every verification that uses it.
///
/// `@unchecked Sendable`: an `X509_STORE` is reference counted and locks internally; OpenSSL
/// supports verifying against one store from many threads (every `SSL_CTX` does).
final class TrustStore: @unchecked Sendable {
    let pointer: OpaquePointer?
    /// Messages from anchors that could not be added, reported on the first failed verification.
    let setupProblems: [String]
    /// Chains recently verified against this store.
    let cache = VerifiedChainCache()

    init(anchors: [X509Certificate], includingSystem: Bool) {
        guard let store = X509_STORE_new() else {
            pointer = nil
            setupProblems = OpenSSLErrorQueue.drain()
            return
        }
        var problems: [String] = []
        if includingSystem, X509_STORE_set_default_paths(store) != 1 {
            problems.append("the system trust store could not be loaded: " + OpenSSLErrorQueue.drain().joined(separator: "; "))
        }
        for anchor in anchors {
            do {
                let handle = try X509Handle(der: anchor.derRepresentation)
                // X509_STORE_add_cert takes its own reference.
                if X509_STORE_add_cert(store, handle.pointer) != 1 {
                    let messages = OpenSSLErrorQueue.drain()
                    // Adding the same anchor twice is harmless.
                    if !messages.contains(where: { $0.contains("cert already in hash table") }) {
                        problems.append("anchor \(anchor.subject) was not added: " + messages.joined(separator: "; "))
                    }
                }
            } catch {
                problems.append("anchor \(anchor.subject) could not be parsed")
            }
        }
        if !anchors.isEmpty {
            // A caller-supplied anchor need not be self-signed (a pinned private intermediate,
            // a self-signed leaf): let the chain stop at any certificate in the store.
            X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        }
        pointer = store
        setupProblems = problems
    }

    deinit {
        if let pointer { X509_STORE_free(pointer) }
    }
}

import Foundation

/// The list-signing keys a store trusts: the configured set, and the key documents accepted
/// since (every one of them, so that the file can be verified again from the configured set
/// on every load).
struct TrustedKeys: Sendable {
    /// The set the configuration ships.
    let configured: ListKeySet
    /// The set lists are verified with: the newest accepted document's, else the configured one.
    var current: ListKeySet
    /// The documents accepted after the configured version, oldest first.
    var accepted: [KeyDocument.EnvelopeWire]

    init(configured: ListKeySet) {
        self.configured = configured
        self.current = configured
        self.accepted = []
    }
}

extension ListUpdater {
    /// The version of the key set lists are verified with now (``PinStore/keySetVersion``).
    var keySetVersion: Int64 {
        state.withLock { $0.keys.current.version }
    }

    /// Reads the key documents an earlier run (or another process sharing the storage
    /// directory) accepted and verifies them again from the configured set; takes them when
    /// they lead further than the keys in force. A file that does not verify (edited,
    /// truncated, planted) is refused: the keys in force stay, and the log says so.
    func loadKeyDocuments() {
        // Without key documents configured the store is exactly today's: the configured keys,
        // and no other file read.
        guard configuration.keyDocumentURL != nil else { return }
        do {
            // The list file's load already warned about a shared folder: no second warning.
            guard let data = try keyFile.readBytes(logger: nil) else { return }
            let documents = try KeyChain.documents(in: data, maximumSize: KeyChain.maximumStoredSize)
            // Documents the configuration already covers (a release that ships newer keys) are
            // not needed any more.
            guard documents.contains(where: { $0.keySet.version > configuredKeys.version }) else { return }
            let accepted = try KeyChain.follow(from: configuredKeys, documents: documents,
                                               maximumSteps: KeyChain.maximumStoredDocuments)
            guard let last = accepted.last else { return }
            state.withLock { state in
                guard last.keySet.version > state.keys.current.version else { return }
                state.keys.current = last.keySet
                state.keys.accepted = accepted.map(\.wire)
            }
        } catch {
            logger.warning("ignoring the stored key documents; lists are verified with the configured keys until the next update", metadata: [
                "pinstore.reason": "\(error)", "pinstore.file": "\(keyFile.url.path)",
            ])
        }
    }

    /// Follows the published key documents from the trusted version (the first step of every
    /// download), saves and installs what it accepted, and returns the key set to
    /// verify the list with. Without a ``PinStore/Configuration/keyDocumentURL`` it returns the keys in
    /// force and touches nothing.
    ///
    /// - Throws: what ``KeyChain/follow(from:documents:maximumSteps:)`` and
    ///   ``KeyChain/checkNotExpired(_:at:)`` throw, and ``PinStoreError/Code/network`` when the
    ///   documents cannot be downloaded. The pins in force never change here.
    func refreshKeys(at now: Date) async throws(PinStoreError) -> ListKeySet {
        let trusted = state.withLock { $0.keys }
        guard let url = configuration.keyDocumentURL else { return trusted.current }
        let request = FingerprintListRequest(url: url, timeout: configuration.requestTimeout,
                                             maximumBodySize: KeyChain.maximumSize, allowsLoopbackHTTP: url.isLoopbackHTTP)
        let response = try await fetcher.fetch(request)
        guard (200..<300).contains(response.statusCode) else {
            throw PinStoreError(.network, "The key document server answered HTTP \(response.statusCode) for \(url.absoluteString).")
        }
        let documents = try KeyChain.documents(in: response.body)
        let accepted = try KeyChain.follow(from: trusted.current, documents: documents)
        var keys = trusted
        if let last = accepted.last {
            keys.current = last.keySet
            keys.accepted += accepted.map(\.wire)
            // Every verified step is kept (as The Update Framework persists each root), even
            // when the final one turns out expired below.
            do {
                try PersistentListFile.writeAtomically(try KeyChain.encode(keys.accepted), to: keyFile.url)
            } catch {
                metrics.saveFailures.increment()
                logger.error("could not save the key documents; they are in force in this process only", metadata: ["pinstore.reason": "\(error)"])
            }
            state.withLock { $0.keys = keys }
            logger.info("list-signing keys rotated", metadata: [
                "pinstore.identifier": "\(configuration.identifier)",
                "pinstore.keyVersion": "\(last.keySet.version)", "pinstore.threshold": "\(last.keySet.threshold)",
            ])
        }
        // An expired final document stops the update here, and the list in force stays as it is.
        try KeyChain.checkNotExpired(keys.current, at: now)
        if let last = accepted.last { dropListNotSignedBy(last.keySet, at: now) }
        return keys.current
    }

    /// After a rotation, the list in force counts only if the new key set signed it too.
    /// Otherwise its pins stop counting at once, and with them its version and timestamp as the
    /// rollback floor: a list that a retired (perhaps leaked) key signed, or fast-forwarded to
    /// a huge version, must neither stay in force nor block the team's next list, which this
    /// same update downloads right after. Until it arrives, the host falls back to the fallback
    /// pins and the static policies, or is refused as unpinned (fail closed).
    func dropListNotSignedBy(_ keys: ListKeySet, at now: Date) {
        guard let stored = inForce.withLock({ $0.stored }) else { return }
        if let persisted = try? file.load(), Self.identity(of: persisted) == stored.identity,
           (try? verifier(keys).verify(persisted)) != nil {
            return
        }
        let dropped = inForce.withLock { state in
            guard state.stored?.identity == stored.identity else { return false }   // replaced meanwhile
            state.replaceList(nil, expires: nil)
            return true
        }
        guard dropped else { return }
        hooks.withLock { $0 }.listChanged(now)
        logger.warning("the list in force is not signed by the new list-signing keys; its pins no longer count", metadata: [
            "pinstore.identifier": "\(configuration.identifier)", "pinstore.keyVersion": "\(keys.version)",
        ])
    }
}

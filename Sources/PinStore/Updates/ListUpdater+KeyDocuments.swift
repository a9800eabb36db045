import Foundation

extension ListUpdater {
    /// The version of the key set lists are verified with now (``PinStore/keySetVersion``).
    var keySetVersion: Int64 {
        trust.withLock { $0.keys.version }
    }

    /// Reads the key documents an earlier run (or another process sharing the storage
    /// directory) accepted and hands them to the trusted state, which verifies them again from
    /// the configured set and takes them when they lead further than the keys in force. A file
    /// that does not verify (edited, truncated, planted) is refused: the keys in force stay, and
    /// the log says so.
    func loadKeyDocuments() {
        // Without key documents configured the store is exactly today's: the configured keys,
        // and no other file read.
        guard configuration.keyDocumentURL != nil else { return }
        let now = clock.now()
        do {
            // The list file's load already warned about a shared folder: no second warning.
            guard let data = try keyFile.readBytes(logger: nil) else { return }
            let documents = try KeyChain.documents(in: data, maximumSize: KeyChain.maximumStoredSize)
            try changingTrust(at: now) { trusted, _ throws(PinStoreError) in
                let change = try trusted.adoptSavedKeyDocuments(documents)
                if change.droppedList { logDroppedList(keys: trusted.keys) }
            }
        } catch {
            logger.warning("ignoring the stored key documents; lists are verified with the configured keys until the next update", metadata: [
                "pinstore.reason": "\(error)", "pinstore.file": "\(keyFile.url.path)",
            ])
        }
    }

    /// Follows the published key documents from the trusted version (the first step of every
    /// download) and saves what the trusted state accepted. Without a
    /// ``PinStore/Configuration/keyDocumentURL`` it touches nothing.
    ///
    /// - Throws: what ``KeyChain/follow(from:documents:maximumSteps:)`` and
    ///   ``KeyChain/checkNotExpired(_:at:)`` throw, ``PinStoreError/Code/invalidKeyDocument``
    ///   when the download is too large or encoded, ``PinStoreError/Code/network`` when the
    ///   documents cannot be downloaded, and ``PinStoreError/Code/deadlineExceeded`` when the
    ///   download outlives ``PinStore/Configuration/requestTimeout``. The list in force changes
    ///   only when a new key set did not sign it.
    func refreshKeys(at now: Date) async throws(PinStoreError) {
        guard let url = configuration.keyDocumentURL else { return }
        let request = FingerprintListRequest(url: url, timeout: configuration.requestTimeout,
                                             maximumBodySize: KeyChain.maximumSize, allowsLoopbackHTTP: url.isLoopbackHTTP,
                                             document: "key documents")
        let response: FingerprintListResponse
        do {
            response = try await fetcher.fetchWithinDeadline(request)
        } catch where error.code == .invalidListData {
            // A fetcher refuses a body (too large, compressed) with the list's code, since it
            // serves both downloads; for the key documents the documented code is this one.
            throw PinStoreError(.invalidKeyDocument, error.reason, file: error.file, line: error.line)
        }
        guard (200..<300).contains(response.statusCode) else {
            throw PinStoreError(.network, "The key document server answered HTTP \(response.statusCode) for \(url.absoluteString).")
        }
        let documents = try KeyChain.documents(in: response.body)
        try changingTrust(at: now) { trusted, _ throws(PinStoreError) in
            let change = try trusted.followKeyDocuments(documents)
            if let newest = change.accepted.last {
                // Every verified step is kept (as The Update Framework persists each root), even
                // when the final one turns out expired below.
                do {
                    try PersistentListFile.writeAtomically(try KeyChain.encode(trusted.acceptedDocuments), to: keyFile.url)
                } catch {
                    metrics.saveFailures.increment()
                    logger.error("could not save the key documents; they are in force in this process only", metadata: ["pinstore.reason": "\(error)"])
                }
                logger.info("list-signing keys rotated", metadata: [
                    "pinstore.identifier": "\(configuration.identifier)",
                    "pinstore.keyVersion": "\(newest.keySet.version)", "pinstore.threshold": "\(newest.keySet.threshold)",
                ])
            }
            if change.droppedList { logDroppedList(keys: trusted.keys) }
            // An expired final document stops the update here: no list is accepted until the
            // team re-signs it.
            try trusted.checkKeySetNotExpired(at: now)
        }
    }

    /// The list in force was not signed by the new key set: its pins stopped counting.
    private func logDroppedList(keys: ListKeySet) {
        logger.warning("the list in force is not signed by the new list-signing keys; its pins no longer count", metadata: [
            "pinstore.identifier": "\(configuration.identifier)", "pinstore.keyVersion": "\(keys.version)",
        ])
    }
}

import Foundation

/// What a store trusts about its list, in one value: the list-signing key set in force, the key
/// documents that led to it, and the list in force (its pins, its `version` and timestamp as the
/// rollback floor, its `domainsConfig` and CT section, and the signed bytes it came in).
///
/// It is the only door for new trust (python-tuf's `TrustedMetadataSet` is the model): a key
/// document or a list gets in through one of its methods only, which verifies it against what is
/// already trusted and then accepts it, or throws and changes nothing. It does no I/O and reads no
/// clock: ``ListUpdater`` downloads, reads and writes the files, feeds the bytes in, and publishes
/// the list in force to the store whenever ``listRevision`` moves.
///
/// The invariant it keeps: **the list in force is signed by the key set in force.** Whenever the
/// key set changes, by whichever path (a key document downloaded, the documents another process
/// saved in the shared folder, those an earlier run saved, read at start-up), the list in force is
/// verified again with the new set and dropped, its version floor with it, when the new set did
/// not sign it. A list that a retired (perhaps leaked) key signed, fast-forwarded to a huge
/// `version`, therefore neither stays in force nor refuses the team's next list as a rollback.
/// Until that list arrives, hosts fall back to the fallback pins and the static policies, or are
/// refused as unpinned (fail closed).
struct TrustedListState: Sendable {
    /// How lists are verified and installed (from the configuration).
    struct Options: Sendable {
        /// ``PinStore/Configuration/requiresWholeListSignature``.
        var requireListSignature: Bool
        /// Challenge or static mode (``PinStore/Configuration/useChallenge``).
        var mode: PersistedList.Mode
        /// ``PinStore/ExpiredListPolicy/refusePins``: no pin outlives its list's `expires`.
        var capsPinsAtListExpiry: Bool
    }

    /// The list in force and the signed bytes it was verified from, kept so that it can be
    /// verified again, from memory, when the key set changes.
    struct ListInForce: Sendable {
        /// What decisions and later lists use: the pins, the floor, the sections.
        let list: PinStore.StoredList
        /// The signed material as received (its `nextUpdate` is the file's business, not read here).
        let material: PersistedList
    }

    /// What ``acceptList(_:at:)`` did with a list.
    enum ListOutcome: Sendable, Equatable {
        /// It is in force now; `valid` are its entries valid at the time given, before any cap
        /// at the list's `expires` (what the next download is scheduled from).
        case installed(valid: [FingerprintEntry])
        /// It carries the `version` already in force: nothing changed.
        case sameVersion
    }

    /// What a key document chain offered to the state changed.
    struct KeyChange: Sendable {
        /// The documents accepted, oldest first; empty when the key set in force stays.
        var accepted: [KeyDocument] = []
        /// Whether the list in force was dropped because the new key set did not sign it.
        var droppedList = false
    }

    /// The set the configuration ships: where every key document chain starts.
    let configuredKeys: ListKeySet
    let options: Options
    /// The set lists are verified with: the newest accepted document's, else the configured one.
    private(set) var keys: ListKeySet
    /// The documents accepted after the configured version, oldest first (what the key document
    /// file holds, so that it can be verified again from the configured set on every load).
    private(set) var acceptedDocuments: [KeyDocument.EnvelopeWire] = []
    /// The list in force (nil: none yet, or dropped by a key change).
    private(set) var inForce: ListInForce?
    /// Moves every time the list in force changes (installed, restored, dropped): whoever
    /// publishes it compares revisions rather than lists.
    private(set) var listRevision: UInt64 = 0

    /// A state trusting `configuredKeys` and no list yet.
    init(configuredKeys: ListKeySet, options: Options) {
        self.configuredKeys = configuredKeys
        self.options = options
        self.keys = configuredKeys
    }

    // MARK: - Key documents

    /// Follows the key documents a list server publishes from the key set in force
    /// (``KeyChain/follow(from:documents:maximumSteps:)``).
    ///
    /// Every verified step counts, also when the final document has expired (as The Update
    /// Framework keeps every verified root): the key set moves, the list in force is verified
    /// again with it, and no list is accepted until the team re-signs
    /// (``checkKeySetNotExpired(at:)``). Keeping the old set instead would keep trusting the
    /// key the team retired.
    ///
    /// - Throws: what ``KeyChain/follow(from:documents:maximumSteps:)`` throws; nothing changes then.
    mutating func followKeyDocuments(_ documents: [KeyDocument]) throws(PinStoreError) -> KeyChange {
        let accepted = try KeyChain.follow(from: keys, documents: documents)
        guard let newest = accepted.last else { return KeyChange() }
        acceptedDocuments += accepted.map(\.wire)
        return KeyChange(accepted: accepted, droppedList: changeKeys(to: newest.keySet))
    }

    /// Takes the key documents saved in the storage folder (by an earlier run, or by another
    /// process sharing the folder): verified again from the configured set, and taken only
    /// when they lead further than the key set in force.
    ///
    /// - Throws: what ``KeyChain/follow(from:documents:maximumSteps:)`` throws (an edited,
    ///   truncated or planted file); nothing changes then.
    mutating func adoptSavedKeyDocuments(_ documents: [KeyDocument]) throws(PinStoreError) -> KeyChange {
        // Documents the configuration already covers (a release that ships newer keys) are not
        // needed any more.
        guard documents.contains(where: { $0.keySet.version > configuredKeys.version }) else { return KeyChange() }
        let accepted = try KeyChain.follow(from: configuredKeys, documents: documents,
                                           maximumSteps: KeyChain.maximumStoredDocuments)
        guard let newest = accepted.last, newest.keySet.version > keys.version else { return KeyChange() }
        acceptedDocuments = accepted.map(\.wire)
        return KeyChange(accepted: accepted, droppedList: changeKeys(to: newest.keySet))
    }

    /// Refuses lists while the newest key document has expired at `now` (a freeze attack, or a
    /// publisher who forgot to re-sign). The configured set never expires.
    func checkKeySetNotExpired(at now: Date) throws(PinStoreError) {
        try KeyChain.checkNotExpired(keys, at: now)
    }

    /// The one place the key set changes. Returns whether the list in force was dropped.
    private mutating func changeKeys(to newKeys: ListKeySet) -> Bool {
        keys = newKeys
        guard let current = inForce else { return false }
        // The same signed bytes under the same options: the new set either verifies them to the
        // same list (a whole-list signature that is present must verify, so what it covers
        // cannot quietly change meaning) or refuses them.
        if (try? verifier.verify(current.material)) != nil { return false }
        inForce = nil
        listRevision &+= 1
        return true
    }

    // MARK: - Lists

    /// The verifier for the key set in force.
    var verifier: ListVerifier {
        ListVerifier(keys: keys, requireListSignature: options.requireListSignature, mode: options.mode)
    }

    /// Verifies `material` with the key set in force; changes nothing.
    func verify(_ material: PersistedList) throws(PinStoreError) -> PinStore.VerifiedList {
        try verifier.verify(material)
    }

    /// A list downloaded, or saved in the shared folder by another process: verified with the
    /// key set in force, then put in force when it may replace the list in force at `now`
    /// (``ListAcceptance``: its own `expires`, rollback, at least one entry valid).
    ///
    /// - Throws: ``PinStoreError/Code/expired`` while the newest key document has expired, and
    ///   what ``ListVerifier`` and ``ListAcceptance`` throw; nothing changes then.
    mutating func acceptList(_ material: PersistedList, at now: Date) throws(PinStoreError) -> ListOutcome {
        try checkKeySetNotExpired(at: now)
        let verified = try verify(material)
        guard try ListAcceptance.check(verified, against: inForce?.list, at: now) else { return .sameVersion }
        let valid = try ListAcceptance.validEntries(of: verified, at: now)
        install(valid, from: verified)
        return .installed(valid: valid)
    }

    /// The list an earlier run saved, at start-up (after its key documents): verified with the
    /// key set in force and put in force as it was, whatever its age. It was accepted when it
    /// arrived; a list past its `expires` is the expiry policy's business, and one with no
    /// entry valid any more makes the first update a blocking one.
    ///
    /// - Throws: what ``ListVerifier`` throws, and ``PinStoreError/Code/storage`` when a list is
    ///   already in force (a saved list never replaces one: only ``acceptList(_:at:)`` does,
    ///   with its rollback check); nothing changes then.
    mutating func restoreList(_ material: PersistedList, at now: Date) throws(PinStoreError) -> PinStore.VerifiedList {
        guard inForce == nil else {
            throw PinStoreError(.storage, "A list is already in force; a saved list is only read at start-up.")
        }
        let verified = try verify(material)
        install(verified.entries.filter { $0.isValid(at: now) }, from: verified)
        return verified
    }

    private mutating func install(_ entries: [FingerprintEntry], from verified: PinStore.VerifiedList) {
        // Under ``PinStore/ExpiredListPolicy/refusePins`` no pin outlives its list: every read
        // path (validate, the evaluators, the generation that re-checks pooled connections) then
        // drops the list's pins at the list's `expires`, with nothing checked per decision.
        var entries = entries
        if options.capsPinsAtListExpiry, let listExpires = verified.expires {
            entries = entries.map { entry in
                entry.expires <= listExpires ? entry
                    : FingerprintEntry(name: entry.name, fingerprint: entry.fingerprint, expires: listExpires,
                                       depth: entry.depth, kind: entry.kind)
            }
        }
        let material = verified.persisted
        let list = PinStore.StoredList(index: PinIndex(entries: entries), timestamp: verified.timestamp,
                                       updatedAt: material.updatedAt, identity: Self.identity(of: material),
                                       domainsConfig: verified.domainsConfig, version: verified.version,
                                       certificateTransparency: verified.certificateTransparency, expires: verified.expires,
                                       revocations: verified.revocations, crl: verified.crl)
        inForce = ListInForce(list: list, material: material)
        listRevision &+= 1
    }

    /// What tells two saved lists apart: the signed material and when it was downloaded. The
    /// due date is left out: it is set after a list is accepted, and a file another process
    /// saved is told apart by its download time.
    static func identity(of persisted: PersistedList) -> Data {
        var material = Data()
        let parts = [persisted.body, Data((persisted.challenge ?? "").utf8), Data((persisted.signature ?? "").utf8),
                     Data((persisted.extraSignatures ?? "").utf8),
                     Data("\(persisted.mode.rawValue)|\(persisted.updatedAt.map { "\($0)" } ?? "-")".utf8)]
        for part in parts {
            withUnsafeBytes(of: UInt64(part.count).bigEndian) { material.append(contentsOf: $0) }
            material.append(part)
        }
        return SHA256Digest.hash(material)
    }
}

import Foundation

/// Whether a list whose signatures verified (``ListVerifier``) may replace the list in force:
/// its own `expires`, rollback, and at least one entry still valid. Pure functions of the
/// verified list, the list in force and one time, with no clock, file or lock, so
/// ``ListUpdater`` applies exactly the same rules to a download and to a list another process
/// saved, and tests check them without a store or a network.
package enum ListAcceptance {
    /// Checks `verified` against `current` at `now`. Returns false when it has the same
    /// `version` as the list in force: nothing to do.
    ///
    /// - Throws: ``PinStoreError/Code/expired`` for a list past its `expires`,
    ///   ``PinStoreError/Code/rollback`` or ``PinStoreError/Code/invalidListData`` for an older
    ///   one, ``PinStoreError/Code/invalidListSignature`` for a static list without the
    ///   whole-list signature the list in force had.
    static func check(_ verified: PinStore.VerifiedList, against current: PinStore.StoredList?, at now: Date) throws(PinStoreError) -> Bool {
        try checkNotExpired(verified, at: now)
        return try checkRollback(verified, against: current)
    }

    /// Refuses a list past its own `expires` at `now`: a validly signed old list replayed by
    /// whoever answers the list request (a freeze attack) must not count as fresh.
    static func checkNotExpired(_ verified: PinStore.VerifiedList, at now: Date) throws(PinStoreError) {
        guard let expires = verified.expires, now.timeIntervalSince1970 >= Double(expires) else { return }
        throw PinStoreError(.expired, "The list expired at \(Date(timeIntervalSince1970: TimeInterval(expires))) (version \(verified.version.map(String.init) ?? "none")); it may be an old list replayed. Publish a freshly signed list with a later \"expires\".")
    }

    /// Refuses a list older than the one in force: a lower signed timestamp or `version`, or
    /// none at all once one has been seen (else a signed body without one would erase the
    /// floor and let an older list in after it). Returns false when the list has the same
    /// `version` as the one in force: nothing to do.
    ///
    /// A static list without a whole-list signature after one with it is refused as what it is,
    /// a missing signature (``PinStoreError/Code/invalidListSignature``, so
    /// ``PinStore/UpdateResult/invalidSignature``): it has no signed version or timestamp to
    /// compare, and could be any older list replayed.
    static func checkRollback(_ verified: PinStore.VerifiedList, against current: PinStore.StoredList?) throws(PinStoreError) -> Bool {
        // A static list has a signed version or timestamp only under a whole-list signature.
        if verified.persisted.mode == .static, verified.timestamp == nil, verified.version == nil,
           let current, current.version != nil || current.timestamp != nil {
            let had = [current.version.map { "version \($0)" }, current.timestamp.map { "timestamp \($0)" }].compactMap { $0 }.joined(separator: ", ")
            throw PinStoreError(.invalidListSignature, "The list has no whole-list signature (\"listSignature\"), but the list in force had one (\(had)): "
                + "without it the list's version and timestamp are not signed, and it could be an older list replayed. "
                + "Sign it with `pinstore sign` (without --no-list-signature).")
        }
        if let storedVersion = current?.version {
            guard let newVersion = verified.version else {
                throw PinStoreError(.rollback, "The list has no signed version, but the stored list has version \(storedVersion); refusing a possible rollback.")
            }
            if newVersion < storedVersion {
                throw PinStoreError(.rollback, "The list's version \(newVersion) is lower than the stored list's \(storedVersion); refusing a rollback.")
            }
            if newVersion == storedVersion { return false }
        }
        guard let storedTimestamp = current?.timestamp else { return true }
        guard let newTimestamp = verified.timestamp else {
            throw PinStoreError(.invalidListData, "The list has no timestamp, but the stored list has \(storedTimestamp); refusing a possible rollback.")
        }
        if newTimestamp < storedTimestamp {
            throw PinStoreError(.invalidListData, "The list's timestamp \(newTimestamp) is older than the stored list's \(storedTimestamp); refusing a rollback.")
        }
        return true
    }

    /// The entries of `verified` valid at `now`.
    ///
    /// - Throws: ``PinStoreError/Code/noValidEntries`` when there is none: the pins in force stay.
    static func validEntries(of verified: PinStore.VerifiedList, at now: Date) throws(PinStoreError) -> [FingerprintEntry] {
        let valid = verified.entries.filter { $0.isValid(at: now) }
        guard !valid.isEmpty else {
            throw PinStoreError(.noValidEntries, verified.entries.isEmpty
                ? "The verified list has no entries; the stored pins are kept."
                : "Every entry of the verified list has expired; the stored pins are kept.")
        }
        return valid
    }
}

extension ListAcceptance {
    /// What a publisher checks on the exact bytes it is about to put in place of the list it
    /// served last: the runtime's own ``ListVerifier`` (whole-list signatures required, at least
    /// `threshold` distinct keys of `keys`) and ``ListAcceptance`` (not expired at `now`, a
    /// version above `previousVersion` and a timestamp not below `previousTimestamp`, at least
    /// one entry valid at `now`). A list that passes is one a store trusting `keys` installs.
    ///
    /// - Returns: The list's signed version, expiry and timestamp, and its entries valid at `now`.
    /// - Throws: The ``PinStoreError`` a store would refuse the list with.
    package static func checkPublishable(_ body: Data, keys: [P256PublicKey], threshold: Int,
                                         previousVersion: Int64?, previousTimestamp: Int64?,
                                         at now: Date) throws(PinStoreError) -> (version: Int64, expires: Int64?, timestamp: Int64, entries: [FingerprintEntry]) {
        let keySet = try ListKeySet(version: 0, keys: keys, threshold: threshold, expires: nil)
        let verified = try ListVerifier(keys: keySet, requireListSignature: true, mode: .static)
            .verify(PersistedList(mode: .static, body: body, nextUpdate: 0))
        guard let version = verified.version, let timestamp = verified.timestamp else {
            throw PinStoreError(.invalidListData, "The list has no signed version and timestamp; stores could not refuse a rollback to it.")
        }
        let current = previousVersion == nil && previousTimestamp == nil ? nil
            : PinStore.StoredList(index: PinIndex(entries: []), timestamp: previousTimestamp, updatedAt: nil,
                                  identity: Data(), version: previousVersion)
        guard try check(verified, against: current, at: now) else {
            throw PinStoreError(.rollback, "The list has version \(version), the version already published; stores would ignore it.")
        }
        return (version, verified.expires, timestamp, try validEntries(of: verified, at: now))
    }
}

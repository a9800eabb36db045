import Foundation
import Testing
@testable import PinStore

/// The trusted state on its own: each door (key documents from the server or the shared folder,
/// lists downloaded or restored), each refusal, and the list in force verified again whenever the
/// key set changes. No store, no file, no network; keys made fresh by OpenSSL.
@Suite struct TrustedListStateTests {
    let ring: KeyRing
    let now = Date(timeIntervalSince1970: TimeInterval(Rotation.now))

    init() throws {
        ring = try KeyRing(count: 3)
    }

    /// A state configured with `keys` of the ring (version 1) and `threshold`.
    func state(keys: [Int] = [0], threshold: Int = 1, capsPins: Bool = true) throws -> TrustedListState {
        TrustedListState(configuredKeys: try ListKeySet(version: 1, keys: ring.publicKeys(keys), threshold: threshold, expires: nil),
                         options: .init(requireListSignature: true, mode: .static, capsPinsAtListExpiry: capsPins))
    }

    /// A static list signed by `signers`, as the store would have downloaded it.
    func list(signers: [Int], entries: [FingerprintEntry] = [Rotation.pinned], version: Int64? = 1,
              expires: Int64? = nil) throws -> PersistedList {
        PersistedList(mode: .static, body: try Rotation.list(ring, signers: signers, entries: entries, version: version, expires: expires),
                      nextUpdate: 0, updatedAt: TimeInterval(Rotation.now))
    }

    /// Key document 2: key 1 alone, signed by keys 0 (old) and 1 (new).
    func rotationToKeyOne(expires: Int64 = Rotation.later) throws -> [KeyDocument] {
        [try KeyDocument(wire: Rotation.document(ring, version: 2, keys: [1], threshold: 1, signers: [0, 1], expires: expires))]
    }

    // MARK: - Key documents

    @Test func aKeyDocumentSignedByTheOldAndTheNewKeysBecomesTheKeySetInForce() throws {
        var trusted = try state()
        let change = try trusted.followKeyDocuments(rotationToKeyOne())
        #expect(change.accepted.map(\.keySet.version) == [2])
        #expect(trusted.keys.version == 2)
        #expect(trusted.acceptedDocuments.count == 1)
    }

    @Test func aKeyDocumentTheKeysInForceDidNotSignIsRefusedAndNothingChanges() throws {
        var trusted = try state()
        _ = try trusted.acceptList(list(signers: [0]), at: now)
        let revision = trusted.listRevision
        // Key 1 alone names itself: the key set in force (key 0) did not sign that.
        let forged = [try KeyDocument(wire: Rotation.document(ring, version: 2, keys: [1], threshold: 1, signers: [1]))]
        let error = #expect(throws: PinStoreError.self) { try trusted.followKeyDocuments(forged) }
        #expect(error?.code == .keyDocumentThresholdNotMet)
        #expect(trusted.keys.version == 1)
        #expect(trusted.acceptedDocuments.isEmpty)
        #expect(trusted.inForce != nil)
        #expect(trusted.listRevision == revision)
    }

    @Test func aKeyChangeDropsTheListInForceAndItsFloorWhenTheNewSetDidNotSignIt() throws {
        var trusted = try state()
        _ = try trusted.acceptList(list(signers: [0], entries: [Rotation.other], version: .max - 1), at: now)
        let revision = trusted.listRevision
        let change = try trusted.followKeyDocuments(rotationToKeyOne())
        #expect(change.droppedList)
        #expect(trusted.inForce == nil)
        #expect(trusted.listRevision != revision)
        // The floor went with the list: the team's next list, far below the dropped version, goes in force.
        #expect(try trusted.acceptList(list(signers: [1], version: 43), at: now) == .installed(valid: [Rotation.pinned]))
        #expect(trusted.inForce?.list.version == 43)
    }

    @Test func aKeyChangeKeepsTheListInForceAndItsFloorWhenTheNewSetSignedItToo() throws {
        // Set 1: keys 0 and 1; set 2: keys 1 and 2. Key 1, in both, signed the list.
        var trusted = try state(keys: [0, 1])
        _ = try trusted.acceptList(list(signers: [1], version: 42), at: now)
        let revision = trusted.listRevision
        let rotation = [try KeyDocument(wire: Rotation.document(ring, version: 2, keys: [1, 2], threshold: 1, signers: [0, 2]))]
        let change = try trusted.followKeyDocuments(rotation)
        #expect(!change.droppedList)
        #expect(trusted.keys.version == 2)
        #expect(trusted.inForce?.list.version == 42)
        #expect(trusted.listRevision == revision)
        let error = #expect(throws: PinStoreError.self) { try trusted.acceptList(list(signers: [2], version: 41), at: now) }
        #expect(error?.code == .rollback)
    }

    @Test func keyDocumentsSavedInTheSharedFolderDropTheListInForceWhenTheNewSetDidNotSignIt() throws {
        var trusted = try state()
        _ = try trusted.acceptList(list(signers: [0], version: .max - 1), at: now)
        let change = try trusted.adoptSavedKeyDocuments(rotationToKeyOne())
        #expect(change.droppedList)
        #expect(trusted.keys.version == 2)
        #expect(trusted.inForce == nil)
    }

    @Test func keyDocumentsSavedInTheSharedFolderThatLeadNoFurtherChangeNothing() throws {
        var trusted = try state()
        _ = try trusted.followKeyDocuments(rotationToKeyOne())
        _ = try trusted.acceptList(list(signers: [1]), at: now)
        let revision = trusted.listRevision
        let change = try trusted.adoptSavedKeyDocuments(rotationToKeyOne())
        #expect(change.accepted.isEmpty)
        #expect(trusted.keys.version == 2)
        #expect(trusted.listRevision == revision)
    }

    @Test func keyDocumentsSavedInTheSharedFolderAreVerifiedFromTheConfiguredSet() throws {
        var trusted = try state()
        _ = try trusted.acceptList(list(signers: [0]), at: now)
        // A planted file: document 2 signed by the key it names only.
        let planted = [try KeyDocument(wire: Rotation.document(ring, version: 2, keys: [1], threshold: 1, signers: [1]))]
        let error = #expect(throws: PinStoreError.self) { try trusted.adoptSavedKeyDocuments(planted) }
        #expect(error?.code == .keyDocumentThresholdNotMet)
        #expect(trusted.keys.version == 1)
        #expect(trusted.inForce != nil)
    }

    @Test func anExpiredFinalKeyDocumentMovesTheKeySetButNoListIsAcceptedUnderIt() throws {
        var trusted = try state()
        _ = try trusted.acceptList(list(signers: [0]), at: now)
        let change = try trusted.followKeyDocuments(rotationToKeyOne(expires: Rotation.now - 1))
        // The retired key is not trusted again because its successor expired.
        #expect(trusted.keys.version == 2)
        #expect(change.droppedList)
        let error = #expect(throws: PinStoreError.self) { try trusted.acceptList(list(signers: [1], version: 2), at: now) }
        #expect(error?.code == .expired)
        #expect(trusted.inForce == nil)
    }

    // MARK: - Lists

    @Test func aListSignedByTheKeySetInForceGoesInForceWithItsSections() throws {
        var trusted = try state()
        let outcome = try trusted.acceptList(list(signers: [0], version: 7, expires: Rotation.later), at: now)
        #expect(outcome == .installed(valid: [Rotation.pinned]))
        #expect(trusted.inForce?.list.version == 7)
        #expect(trusted.inForce?.list.expires == Rotation.later)
        #expect(trusted.inForce?.list.timestamp == Rotation.now)
        #expect(trusted.listRevision == 1)
    }

    @Test func aListAnotherKeySignedIsRefusedAndNothingChanges() throws {
        var trusted = try state()
        _ = try trusted.acceptList(list(signers: [0], version: 1), at: now)
        let error = #expect(throws: PinStoreError.self) { try trusted.acceptList(list(signers: [1], version: 2), at: now) }
        #expect(error?.code == .invalidListSignature)
        #expect(trusted.inForce?.list.version == 1)
        #expect(trusted.listRevision == 1)
    }

    @Test func aLowerVersionThanTheListInForceIsRefusedAsARollback() throws {
        var trusted = try state()
        _ = try trusted.acceptList(list(signers: [0], version: 5), at: now)
        let error = #expect(throws: PinStoreError.self) { try trusted.acceptList(list(signers: [0], version: 4), at: now) }
        #expect(error?.code == .rollback)
        #expect(trusted.inForce?.list.version == 5)
    }

    @Test func theVersionInForceAgainChangesNothing() throws {
        var trusted = try state()
        _ = try trusted.acceptList(list(signers: [0], version: 5), at: now)
        #expect(try trusted.acceptList(list(signers: [0], entries: [Rotation.other], version: 5), at: now) == .sameVersion)
        #expect(trusted.inForce?.list.index.entries == [Rotation.pinned])
        #expect(trusted.listRevision == 1)
    }

    @Test func aListPastItsOwnExpiresIsRefused() throws {
        var trusted = try state()
        let error = #expect(throws: PinStoreError.self) { try trusted.acceptList(list(signers: [0], expires: Rotation.now), at: now) }
        #expect(error?.code == .expired)
        #expect(trusted.inForce == nil)
    }

    @Test func aListWithNoEntryValidIsRefused() throws {
        var trusted = try state()
        let dead = FingerprintEntry(name: Rotation.host, fingerprint: Data(repeating: 7, count: 32), expires: Rotation.now - 1)
        let error = #expect(throws: PinStoreError.self) { try trusted.acceptList(list(signers: [0], entries: [dead]), at: now) }
        #expect(error?.code == .noValidEntries)
        #expect(trusted.inForce == nil)
    }

    @Test func underRefusePinsNoPinOutlivesItsList() throws {
        var trusted = try state(capsPins: true)
        _ = try trusted.acceptList(list(signers: [0], expires: Rotation.later), at: now)
        #expect(trusted.inForce?.list.index.entries.map(\.expires) == [Rotation.later])
        var keeping = try state(capsPins: false)
        _ = try keeping.acceptList(list(signers: [0], expires: Rotation.later), at: now)
        #expect(keeping.inForce?.list.index.entries.map(\.expires) == [Rotation.pinned.expires])
    }

    @Test func aSavedListIsRestoredWithTheKeysInForceAndOnlyWhenNoListIsInForce() throws {
        var trusted = try state()
        let saved = try list(signers: [0], version: 3)
        _ = try trusted.restoreList(saved, at: now)
        #expect(trusted.inForce?.list.version == 3)
        let error = #expect(throws: PinStoreError.self) { try trusted.restoreList(list(signers: [0], version: 4), at: now) }
        #expect(error?.code == .storage)
        #expect(trusted.inForce?.list.version == 3)
    }

    @Test func aSavedListTheKeysInForceDidNotSignIsNotRestored() throws {
        var trusted = try state()
        _ = try trusted.adoptSavedKeyDocuments(rotationToKeyOne())
        let error = #expect(throws: PinStoreError.self) { try trusted.restoreList(list(signers: [0]), at: now) }
        #expect(error?.code == .invalidListSignature)
        #expect(trusted.inForce == nil)
    }

    @Test func theIdentityOfASavedListIgnoresItsDueDate() throws {
        var saved = try list(signers: [0])
        let identity = TrustedListState.identity(of: saved)
        saved.nextUpdate = 1
        #expect(TrustedListState.identity(of: saved) == identity)
        saved.updatedAt = 1
        #expect(TrustedListState.identity(of: saved) != identity)
    }
}

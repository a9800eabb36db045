import Foundation
import Testing
@testable import PinStore
import PinStoreSigning
import PinStoreTestSupport

/// Keys, key documents, lists and stores for the key set, key document and list expiry tests.
/// The keys are made fresh by OpenSSL for each test (no key material in the repository).
struct KeyRing {
    let keys: [P256PrivateKey]

    init(count: Int) throws {
        keys = try (0..<count).map { _ in try P256PrivateKey() }
    }

    subscript(index: Int) -> P256PrivateKey { keys[index] }

    /// The Base64 X9.63 point of key `index`, as a configuration takes it.
    func publicKey(_ index: Int) throws -> String {
        try keys[index].publicKey.x963Representation.base64EncodedString()
    }

    func publicKeys(_ indices: [Int]) throws -> [P256PublicKey] {
        try indices.map { try keys[$0].publicKey }
    }
}

enum Rotation {
    /// 2030-01-01T00:00:00Z, the tests' "now" (``ManualClock/inValidPeriod()``).
    static let now: Int64 = 1_893_456_000
    /// A year later: documents and lists that stay fresh through every test.
    static let later: Int64 = now + 365 * 86_400
    static let listURL = URL(string: "https://pins.pinstore.test/list.json")!
    static let keysURL = URL(string: "https://pins.pinstore.test/keys.json")!
    static let host = "api.pinstore.test"
    static let pinned = FingerprintEntry(name: host, fingerprint: Data(repeating: 7, count: 32), expires: 4_102_444_799)
    static let other = FingerprintEntry(name: host, fingerprint: Data(repeating: 8, count: 32), expires: 4_102_444_799)

    /// Key document `version` naming `keys` of `ring` with `threshold`, signed by `signers`.
    static func document(_ ring: KeyRing, version: Int64, keys: [Int], threshold: Int, signers: [Int],
                         expires: Int64 = later) throws -> KeyDocument.EnvelopeWire {
        let payload = KeyDocument.payload(version: version, expires: expires, threshold: threshold, keys: try ring.publicKeys(keys))
        let envelope = try KeyDocument.envelope(payload: payload, signers: signers.map { ring[$0] })
        return try KeyDocument(envelope: envelope).wire
    }

    /// The served `{"keyDocuments": [...]}`.
    static func served(_ documents: [KeyDocument.EnvelopeWire]) throws -> Data {
        try KeyChain.encode(documents)
    }

    /// A static list of `entries` with whole-list signatures by `signers` (the first makes the
    /// per-entry signatures).
    static func list(_ ring: KeyRing, signers: [Int], entries: [FingerprintEntry] = [pinned], version: Int64? = nil,
                     expires: Int64? = nil, timestamp: Int64 = now) throws -> Data {
        try FingerprintListSigner(privateKey: ring[signers[0]], additionalKeys: signers.dropFirst().map { ring[$0] })
            .staticList(entries, timestamp: timestamp, version: version, expires: expires)
    }

    /// A configuration trusting `keys` of `ring` with `threshold`, with key documents when
    /// `keyDocuments` is set.
    static func configuration(_ ring: KeyRing, keys: [Int], threshold: Int, directory: URL,
                              keyDocuments: Bool = true, useChallenge: Bool = false) throws -> PinStore.Configuration {
        var configuration = PinStore.Configuration(serviceURL: listURL, publicKey: try ring.publicKey(keys[0]),
                                                   useChallenge: useChallenge, identifier: "rotation",
                                                   storageDirectory: directory, requestTimeout: HangGuard.seconds)
        configuration.additionalPublicKeys = try keys.dropFirst().map { try ring.publicKey($0) }
        configuration.signatureThreshold = threshold
        configuration.keyDocumentURL = keyDocuments ? keysURL : nil
        return configuration
    }
}

/// What a fake server publishes: a list and key documents, changed by the test.
final class Publication: @unchecked Sendable {
    private let lock = NSLock()
    private var _list = Data()
    private var _keys = Data("{\"keyDocuments\": []}".utf8)

    var list: Data {
        get { lock.lock(); defer { lock.unlock() }; return _list }
        set { lock.lock(); _list = newValue; lock.unlock() }
    }

    var keys: Data {
        get { lock.lock(); defer { lock.unlock() }; return _keys }
        set { lock.lock(); _keys = newValue; lock.unlock() }
    }

    /// A fetcher answering the list and key document URLs from this publication.
    func fetcher() -> ScriptedFetcher {
        ScriptedFetcher { [self] request in
            let body = request.url == Rotation.keysURL ? self.keys : self.list
            return FingerprintListResponse(statusCode: 200, headers: [:], body: body)
        }
    }
}

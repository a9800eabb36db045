import Foundation

/// What the fuzz targets in `Fuzz/` (a package of their own, never built by users) call: the
/// parsers that read untrusted bytes and are not public API. Reached only through
/// `@_spi(Fuzzing) import PinStore`; not part of the supported surface.
///
/// Each function takes arbitrary bytes and must return normally, whatever they are: an error
/// is an answer, a trap or a sanitizer report is a bug.
///
/// `@_spi`, not `package` access: `Fuzz/` and `Benchmarks/` are packages of their own, so that
/// no user's build resolves their dependencies, and `package` declarations are visible only to
/// targets of this package. An `@_spi` symbol stays out of the public interface users compile
/// against and out of the API-breakage check (README, "Versions and API stability").
@_spi(Fuzzing)
public enum FuzzEntryPoints {
    /// The list key the store-file and list targets verify against (the fixture key in
    /// `Fixtures/keys/list-signing.pub.b64`, so seeds made from the fixtures verify).
    static let fixturePublicKey = "BH8w80NmCqYSWzuYDspGDLcC1aD8VATQbty+EE/uSMy8HXQa1+4ox4S1UdRRDxWyrKZfMExLQ3MW9S47g0TQR+4="

    /// The list document parser (static and challenge mode), the whole-list signature locator
    /// the static verifier and the `revocations` section: what a store does with a downloaded
    /// static body.
    public static func listDocument(_ data: Data) {
        _ = WholeListSignature.locate(in: data)
        guard let document = try? FingerprintListDocument(body: data) else { return }
        _ = try? document.revocations.map(ListRevocations.init)
        guard let key = try? P256PublicKey(configuredString: fixturePublicKey) else { return }
        let verifier = ListSignatureVerifier(publicKey: key)
        _ = try? verifier.verifyStatic(document, cores: 1)
        _ = try? verifier.verifyWholeList(body: data, document: document, required: false)
        for entry in document.entries {
            _ = HostName.listEntryProblem(entry.entry.name)
            _ = PinIndex(entries: [entry.entry])
        }
    }

    /// The trusted key set the key-document target follows from: version 1, the two fixture
    /// keys (`Fixtures/keys/list-signing` and `other-signing`), either one enough, so that seeds
    /// signed with the fixture keys reach every step of the chain rules.
    static let fixtureKeySet: ListKeySet? = {
        let keys = [fixturePublicKey, "BMlS0cLOwE5Flc+z44Ihy4mS+/6XQkxNnmn6q3T1552YJ58Gl5kd/S+c1//FCZoKhIef9gQ7EDlqRa/Lw3GAWiY="]
            .compactMap { try? P256PublicKey(configuredString: $0) }
        return try? ListKeySet(version: 1, keys: keys, threshold: 1, expires: nil)
    }()

    /// Key documents as a store reads them from the list server or its own key document file:
    /// the `{"keyDocuments": [...]}` list parsed (``KeyChain``), one envelope alone parsed
    /// (``KeyDocument``), the chain followed from ``fixtureKeySet`` with every signature
    /// checked, and the final set's expiry judged. Returns the versions accepted, in order
    /// (empty when nothing was), so the target can check the chain rules' promises.
    public static func keyDocuments(_ data: Data) -> [Int64] {
        guard let trusted = fixtureKeySet else { return [] }
        if let document = try? KeyDocument(envelope: data) {
            _ = document.signatureCount(by: trusted)
            _ = document.signatureCount(by: document.keySet)
        }
        guard let documents = try? KeyChain.documents(in: data),
              let accepted = try? KeyChain.follow(from: trusted, documents: documents) else { return [] }
        if let newest = accepted.last {
            // The fixed time of one update; some seeds expire before it, some after.
            _ = try? KeyChain.checkNotExpired(newest.keySet, at: Date(timeIntervalSince1970: 1_900_000_000))
        }
        return accepted.map(\.keySet.version)
    }

    /// The host-name rules, on bytes as a TLS layer or a list might hand them over.
    public static func hostName(_ data: Data) {
        let name = String(decoding: data, as: UTF8.self)
        _ = try? HostName(name)
        _ = HostName.listEntryProblem(name)
        _ = HostName.normalized(name)
    }

    /// The SCT list parser (``EmbeddedSCTs/parseList(_:)``), on bytes as a certificate's SCT
    /// list extension holds them inside its OCTET STRING, with every field read back and the
    /// signed struct built as a check would.
    public static func sctList(_ data: Data) {
        guard let timestamps = try? EmbeddedSCTs.parseList(data) else { return }
        for sct in timestamps {
            _ = (Digest32(sct.logID), sct.signatureNID)
            _ = PrecertificateSignatureInput.bytes(timestamp: sct.timestamp, issuerKeyHash: Data(count: 32),
                                                   tbsCertificate: data, extensions: sct.extensions)
        }
    }

    /// The store file loader: `data` as the content of a real store file in `directory`, read
    /// by ``PersistentListFile`` and verified as a store does at start-up.
    public static func storeFile(_ data: Data, directory: URL) {
        let url = directory.appendingPathComponent("pinstore-fuzz.json")
        guard (try? data.write(to: url)) != nil else { return }
        let file = PersistentListFile(url: url, maximumSize: 4 << 20)
        guard let persisted = try? file.load() else { return }
        guard let store = fuzzStore(directory: directory) else { return }
        _ = try? store.updater.verify(persisted)
    }

    private static let stores = Locked<[URL: PinStore]>([:])

    /// One offline store per directory, reused across runs (building one per input would
    /// measure the store's set-up, not the loader).
    private static func fuzzStore(directory: URL) -> PinStore? {
        stores.withLock { stores in
            if let store = stores[directory] { return store }
            let valid = PinStore.Configuration(serviceURL: URL(string: "https://pins.fuzz.invalid/list.json") ?? directory,
                                               publicKey: fixturePublicKey, identifier: "fuzz-store",
                                               storageDirectory: directory.appendingPathComponent("store"))
            guard let store = try? PinStore(configuration: valid, fetcher: OfflineFetcher()) else { return nil }
            stores[directory] = store
            return store
        }
    }

    private struct OfflineFetcher: FingerprintListFetcher {
        func fetch(_ request: FingerprintListRequest) async throws(PinStoreError) -> FingerprintListResponse {
            throw PinStoreError(.network, "fuzzing is offline")
        }
    }

    /// The issuer the CRL target verifies against: the fixture intermediate
    /// (`Fixtures/pki/intermediate-ca.der`, Base64), so seeds it signed go past the signature.
    /// Kept as bytes in an array: LeakSanitizer does not see the tagged pointer of a `Data`
    /// held by a global, and reported it as a leak.
    static let crlFixtureIssuer: (der: [UInt8], key: Digest32)? = {
        guard let der = Data(base64Encoded: "MIIBsjCCAVigAwIBAgIUCe0EKfv/llnj3RYsjl6xDfbl2acwCgYIKoZIzj0EAwIwIDEeMBwGA1UEAwwVUGluU3RvcmUgVGVzdCBSb290IENBMCAXDTI1MDEwMTAwMDAwMFoYDzIwOTkxMjMxMjM1OTU5WjAoMSYwJAYDVQQDDB1QaW5TdG9yZSBUZXN0IEludGVybWVkaWF0ZSBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABPN7hbCf4UT587hhZ4LlSh+4PIGFIj+xAxdWIwFYV6vATTlm/2s1+b70ZtGHEKUPvtE0vAVi1yFGoWpX8c9ukyajZjBkMBIGA1UdEwEB/wQIMAYBAf8CAQAwDgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBTw95AFYKuPkKBGOVJripmurpenFjAfBgNVHSMEGDAWgBQUS436Qn53JjcPre2EL5sndRRIPDAKBggqhkjOPQQDAgNIADBFAiEAzXgtfVCoidntgn3ARCob/RzdLhqGI2eFUa6SCnuDbgYCIB48x/jIwySNEiQWE/dDK/xW6UcwqXWzX5wCsaOJkmjx"), let fingerprint = Digest32(SHA256Digest.hash(der)),
              let key = ValidatedChain.publicKeyDigest(of: der, fingerprint: fingerprint) else { return nil }
        return (Array(der), key)
    }()

    /// A CRL as a distribution point serves it (DER from the network): read without an issuer
    /// (scope and entries), then verified as the CRL check does against ``crlFixtureIssuer``;
    /// the same bytes also read as a certificate's CRL distribution points.
    public static func crl(_ data: Data) {
        _ = CertificateRevocationList.readUnverified(data)
        if let issuer = crlFixtureIssuer {
            _ = try? CertificateRevocationList(der: data, url: "http://127.0.0.1/intermediate.crl", issuer: Data(issuer.der),
                                               issuerKey: issuer.key, now: 1_800_000_000)
        }
        // Uncached: the store's cache is a global, whose `Data` values LeakSanitizer cannot see.
        _ = CRLSubject.read(data)
    }
}

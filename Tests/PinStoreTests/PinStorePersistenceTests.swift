import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// The file-backed store: restarts, tampering, truncation, permissions, torn files.
@Suite struct PinStorePersistenceTests {
    func primedStore(_ directory: TemporaryDirectory, clock: ManualClock = .inValidPeriod(), fallback: Data? = nil) async throws -> PinStore {
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try StoreFixtures.list("static-good.json")), directory: directory.url,
                                            clock: clock, fallback: fallback)
        #expect(await store.update() == .ok)
        return store
    }

    func reopened(_ directory: TemporaryDirectory, fetcher: ScriptedFetcher = .serving(Data()), fallback: Data? = nil) throws -> PinStore {
        try StoreFixtures.store(fetcher, directory: directory.url, fallback: fallback)
    }

    @Test func restartKeepsPinsWithoutTouchingTheNetwork() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        _ = try await primedStore(directory)
        let fetcher = ScriptedFetcher.serving(Data())
        let again = try reopened(directory, fetcher: fetcher)
        #expect(again.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted)
        #expect(await again.update() == .ok)
        #expect(fetcher.requestCount == 0)
    }

    @Test func restartKeepsTheUpdateSchedule() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let first = try await primedStore(directory)
        #expect(try reopened(directory).nextUpdateDate == first.nextUpdateDate)
    }

    @Test func storeFileIsPrivateToTheUser() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.configuration.storeFileURL.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func editedFileIsIgnoredAndFallbackApplies() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        // Swap the stored body's localhost fingerprint for the attacker's: the JSON stays valid
        // but the signature no longer matches.
        let url = store.configuration.storeFileURL
        var persisted = try JSONDecoder().decode(PersistedList.self, from: Data(contentsOf: url))
        let attacker = SHA256Digest.hash(try StoreFixtures.der("attacker")).base64EncodedString()
        let localhost = SHA256Digest.hash(try StoreFixtures.der("localhost")).base64EncodedString()
        persisted.body = Data(String(decoding: persisted.body, as: UTF8.self).replacingOccurrences(of: localhost, with: attacker).utf8)
        try JSONEncoder().encode(persisted).write(to: url)
        let again = try reopened(directory, fallback: try StoreFixtures.list("fallback.json"))
        #expect(again.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("attacker")) == .untrusted)
        #expect(again.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted) // fallback
        #expect(again.matchPins(commonName: "api.pinstore.test", certificateData: try StoreFixtures.der("api-p256")) == .empty)
    }

    @Test func truncatedFileIsIgnored() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        let url = store.configuration.storeFileURL
        let bytes = try Data(contentsOf: url)
        try bytes.prefix(bytes.count / 2).write(to: url)
        #expect(try reopened(directory).matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func garbageFileIsIgnored() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        try Data((0..<4096).map { _ in UInt8.random(in: 0...255) }).write(to: store.configuration.storeFileURL)
        #expect(try reopened(directory).matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func corruptedFileIsReplacedByTheNextGoodUpdate() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let store = try await primedStore(directory)
        let url = store.configuration.storeFileURL
        let good = try Data(contentsOf: url)
        try Data("{\"format\":1".utf8).write(to: url)
        let fetcher = ScriptedFetcher.serving(try StoreFixtures.list("static-good.json"))
        let again = try reopened(directory, fetcher: fetcher)
        // Nothing valid is stored, so the default update blocks and downloads.
        #expect(await again.update() == .ok)
        #expect(fetcher.requestCount == 1)
        let rewritten = try JSONDecoder().decode(PersistedList.self, from: Data(contentsOf: url))
        #expect(rewritten.body == (try JSONDecoder().decode(PersistedList.self, from: good)).body)
    }

    @Test func fileSignedWithAnotherKeyIsIgnoredAfterKeyRotation() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        _ = try await primedStore(directory)
        var configuration = try StoreFixtures.configuration(directory: directory.url)
        configuration.publicKey = try TestResources.fixtureText("keys/other-signing.pub.b64")
        let rotated = try PinStore(configuration: configuration, fetcher: ScriptedFetcher.serving(Data()), clock: ManualClock.inValidPeriod())
        #expect(rotated.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
    }

    @Test func storesWithDifferentIdentifiersLiveSideBySide() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        _ = try await primedStore(directory)
        let other = try PinStore(configuration: StoreFixtures.configuration(directory: directory.url, identifier: "payments"),
                                 fetcher: ScriptedFetcher.serving(Data()), clock: ManualClock.inValidPeriod())
        #expect(other.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .empty)
        #expect(other.configuration.storeFileURL != (try StoreFixtures.configuration(directory: directory.url)).storeFileURL)
    }

    @Test func readersNeverSeeATornFileWhileAnotherStoreWrites() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let writer = try await primedStore(directory)
        let url = writer.configuration.storeFileURL
        let stop = Locked(false)
        let torn = Locked(0)
        let reads = Locked(0)
        // A reader thread decodes the file as fast as it can while updates rewrite it.
        let reader = Thread {
            while !stop.withLock({ $0 }) {
                if let data = try? Data(contentsOf: url) {
                    if (try? JSONDecoder().decode(PersistedList.self, from: data)) == nil { torn.withLock { $0 += 1 } }
                    reads.withLock { $0 += 1 }
                }
            }
        }
        reader.start()
        for _ in 0..<50 { #expect(await writer.update(mode: .forced) == .ok) }
        stop.withLock { $0 = true }
        try await Task.sleep(for: .milliseconds(50))
        #expect(torn.withLock { $0 } == 0)
        #expect(reads.withLock { $0 } > 0)
    }
}

@Suite struct PinStoreConcurrencyTests {
    @Test func validationsFromManyThreadsDuringUpdatesAlwaysSeeAWholeList() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let good = try StoreFixtures.list("static-good.json")
        let depth = try StoreFixtures.list("static-depth.json")
        let flip = Locked(false)
        let fetcher = ScriptedFetcher { _ in
            let useDepth = flip.withLock { $0.toggle(); return $0 }
            return FingerprintListResponse(statusCode: 200, headers: [:], body: useDepth ? depth : good)
        }
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        _ = await store.update()
        let chain = try TestResources.chainDER("pki/localhost-chain.pem")
        let attacker = try StoreFixtures.der("attacker")
        // Both lists trust the localhost chain and neither trusts the attacker's leaf alone.
        let wrong = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for _ in 0..<30 { _ = await store.update(mode: .forced) } }
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<5_000 {
                        if store.matchPins(commonName: "localhost", certificateChain: chain) != .trusted { wrong.withLock { $0 += 1 } }
                        if store.matchPins(commonName: "localhost", certificateData: attacker) == .trusted { wrong.withLock { $0 += 1 } }
                    }
                }
            }
        }
        #expect(wrong.withLock { $0 } == 0)
        #expect(fetcher.requestCount >= 30)
    }
}

@Suite struct PinStoreConfigurationTests {
    func configuration(_ change: (inout PinStore.Configuration) -> Void) throws -> PinStore.Configuration {
        var configuration = try StoreFixtures.configuration(directory: FileManager.default.temporaryDirectory)
        change(&configuration)
        return configuration
    }

    func initError(_ change: (inout PinStore.Configuration) -> Void) throws -> PinStoreError? {
        do {
            _ = try PinStore(configuration: configuration(change))
            return nil
        } catch let error as PinStoreError {
            return error
        }
    }

    @Test func publicKeyThatDoesNotParseThrowsAtInit() throws {
        let error = try initError { $0.publicKey = "BC3kV9OIDnMu" }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.reason.hasPrefix("publicKey") == true)
    }

    @Test func publicKeyOnAnotherCurveThrowsAtInit() throws {
        let pem = try TestResources.fixtureText("keys/secp384r1.pub.pem")
        #expect(try initError { $0.publicKey = pem }?.code == .invalidConfiguration)
    }

    @Test func pemPublicKeyIsAccepted() throws {
        let pem = try TestResources.fixtureText("keys/list-signing.pub.pem")
        #expect(try initError { $0.publicKey = pem } == nil)
    }

    @Test func malformedFallbackThrowsAtInit() throws {
        let malformed = try StoreFixtures.list("static-malformed.json")
        let error = try initError { $0.fallbackData = malformed }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.reason.hasPrefix("fallbackData") == true)
    }

    @Test func plainHTTPServiceURLIsRefusedUnlessLoopback() throws {
        #expect(try initError { $0.serviceURL = URL(string: "http://pins.example.net/list.json")! }?.code == .invalidConfiguration)
        #expect(try initError { $0.serviceURL = URL(string: "ftp://pins.example.net/list.json")! }?.code == .invalidConfiguration)
        #expect(try initError { $0.serviceURL = URL(string: "http://127.0.0.1:8080/list.json")! } == nil)
        #expect(try initError { $0.serviceURL = URL(string: "http://localhost/list.json")! } == nil)
    }

    @Test func identifierThatCouldEscapeTheFolderIsRefused() throws {
        #expect(try initError { $0.identifier = "../../etc/passwd" }?.code == .invalidConfiguration)
        #expect(try initError { $0.identifier = "" }?.code == .invalidConfiguration)
        #expect(try initError { $0.identifier = "payments-v2.eu_1" } == nil)
    }
}

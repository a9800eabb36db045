import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Every kind of bad input gives its typed result and leaves the stored pins (and the store
/// file, byte for byte) as they were.
@Suite struct PinStoreBadInputTests {
    /// A store that already holds the good static list, and the bytes of its file.
    struct Primed {
        let directory: TemporaryDirectory
        let fetcher: ScriptedFetcher
        let store: PinStore
        let fileBytes: Data

        init(useChallenge: Bool = false, maximumListSize: Int = 1 << 20) async throws {
            directory = try TemporaryDirectory()
            let key = try StoreFixtures.signingKey()
            let good = try StoreFixtures.list(useChallenge ? "challenge-good.json" : "static-good.json")
            fetcher = useChallenge
                ? ScriptedFetcher(ScriptedFetcher.challengeResponder(good, key: key))
                : ScriptedFetcher.serving(good)
            store = try StoreFixtures.store(fetcher, directory: directory.url, useChallenge: useChallenge, maximumListSize: maximumListSize)
            #expect(await store.update() == .ok)
            fileBytes = try Data(contentsOf: store.configuration.storeFileURL)
        }

        /// Forces an update with `script` answering, then checks nothing changed.
        func update(answering script: @escaping ScriptedFetcher.Script) async throws -> PinStore.UpdateReport {
            fetcher.answer(script)
            let report = await store.updateWithReport(mode: .forced)
            #expect(try Data(contentsOf: store.configuration.storeFileURL) == fileBytes, "the store file changed")
            #expect(store.matchPins(commonName: "localhost", certificateData: try StoreFixtures.der("localhost")) == .trusted, "the stored pins changed")
            directory.cleanUp()
            return report
        }

        func update(serving body: Data) async throws -> PinStore.UpdateReport {
            try await update { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: body) }
        }
    }

    @Test(arguments: [
        ("static-malformed.json", PinStore.UpdateResult.invalidData),
        ("static-wrong-types.json", .invalidData),
        ("static-missing-field.json", .invalidData),
        ("static-bad-base64.json", .invalidData),
        ("static-short-fingerprint.json", .invalidData),
        ("static-negative-expires.json", .invalidData),
        ("static-fractional-expires.json", .invalidData),
        ("static-absurd-expires.json", .invalidData),
        ("static-duplicate.json", .invalidData),
        ("static-not-object.json", .invalidData),
        ("static-tampered-fingerprint.json", .invalidSignature),
        ("static-wrong-key.json", .invalidSignature),
        ("static-missing-signature.json", .invalidSignature),
        ("static-invalid-signature.json", .invalidSignature),
        ("static-empty.json", .storeIsEmpty),
        ("static-expired-only.json", .storeIsEmpty),
    ])
    func badStaticListGivesItsResultAndKeepsStore(file: String, expected: PinStore.UpdateResult) async throws {
        let primed = try await Primed()
        let report = try await primed.update(serving: try StoreFixtures.list(file))
        #expect(report.result == expected, "\(file): \(report.error?.description ?? "no error")")
        #expect(report.error != nil)
    }

    @Test func nonJSONBytesAreInvalidData() async throws {
        let report = try await Primed().update(serving: Data([0xff, 0xfe, 0x00, 0x01]))
        #expect(report.result == .invalidData)
    }

    @Test func bodyOverTheLimitIsInvalidData() async throws {
        let primed = try await Primed(maximumListSize: 4096)
        let report = try await primed.update(serving: Data(repeating: 0x20, count: 4097))
        #expect(report.result == .invalidData)
    }

    @Test func httpErrorStatusIsNetworkError() async throws {
        let report = try await Primed().update { _ in FingerprintListResponse(statusCode: 503, headers: [:], body: Data("{}".utf8)) }
        #expect(report.result == .networkError)
        #expect(report.error?.reason.contains("503") == true)
    }

    @Test func transportFailureIsNetworkError() async throws {
        let report = try await Primed().update { _ throws(PinStoreError) in throw PinStoreError(.network, "connection refused") }
        #expect(report.result == .networkError)
    }

    // MARK: Challenge mode

    @Test func challengeRequestCarriesFreshBase64ChallengeOf16Bytes() async throws {
        let primed = try await Primed(useChallenge: true)
        let first = try #require(primed.fetcher.lastRequest?.headers[PinStore.challengeHeader])
        _ = await primed.store.update(mode: .forced)
        let second = try #require(primed.fetcher.lastRequest?.headers[PinStore.challengeHeader])
        #expect(Data(base64Encoded: first)?.count == 16)
        #expect(first != second)
        primed.directory.cleanUp()
    }

    @Test func missingSignatureHeaderIsInvalidSignature() async throws {
        let body = try StoreFixtures.list("challenge-good.json")
        let report = try await Primed(useChallenge: true).update { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: body) }
        #expect(report.result == .invalidSignature)
    }

    @Test func signatureOverAnotherChallengeIsInvalidSignature() async throws {
        let body = try StoreFixtures.list("challenge-good.json")
        let signature = try TestResources.fixtureText("lists/challenge-other-challenge.sig")
        let report = try await Primed(useChallenge: true).update { _ in
            FingerprintListResponse(statusCode: 200, headers: [PinStore.signatureHeader: signature], body: body)
        }
        #expect(report.result == .invalidSignature)
    }

    @Test func signatureByAnotherKeyIsInvalidSignature() async throws {
        let body = try StoreFixtures.list("challenge-good.json")
        let report = try await Primed(useChallenge: true).update(answering: ScriptedFetcher.challengeResponder(body, key: try StoreFixtures.otherSigningKey()))
        #expect(report.result == .invalidSignature)
    }

    @Test func bodyChangedAfterSigningIsInvalidSignature() async throws {
        let body = try StoreFixtures.list("challenge-good.json")
        let sign = ScriptedFetcher.challengeResponder(body, key: try StoreFixtures.signingKey())
        let report = try await Primed(useChallenge: true).update { request throws(PinStoreError) in
            var response = try sign(request)
            response.body = Data(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "4102444799", with: "4102444798").utf8)
            return response
        }
        #expect(report.result == .invalidSignature)
    }

    @Test func olderTimestampIsRefusedAsRollback() async throws {
        let older = try StoreFixtures.list("challenge-older.json")
        let report = try await Primed(useChallenge: true).update(answering: ScriptedFetcher.challengeResponder(older, key: try StoreFixtures.signingKey()))
        #expect(report.result == .invalidData)
        #expect(report.error?.reason.contains("rollback") == true)
    }

    @Test func signedButMalformedChallengeBodyIsInvalidData() async throws {
        let report = try await Primed(useChallenge: true).update(answering: ScriptedFetcher.challengeResponder(Data("{\"fingerprints\":7}".utf8), key: try StoreFixtures.signingKey()))
        #expect(report.result == .invalidData)
    }
}

extension PinStoreBadInputTests {
    @Test func unsignedTimestampInStaticListIsNotARollbackFloor() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        // A static list with a forged huge timestamp (static signatures do not cover it)...
        var json = try JSONSerialization.jsonObject(with: StoreFixtures.list("static-good.json")) as! [String: Any]
        json["timestamp"] = 9_000_000_000_000
        let forged = try JSONSerialization.data(withJSONObject: json)
        let fetcher = ScriptedFetcher.serving(forged)
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        // ...does not make a later good list look like a rollback.
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: try! StoreFixtures.list("static-depth.json")) }
        #expect(await store.update(mode: .forced) == .ok)
        #expect(store.storedEntries.count == 1)
    }
}

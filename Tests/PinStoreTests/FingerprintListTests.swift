import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

@Suite struct FingerprintListTests {
    static func entries(_ count: Int) -> [FingerprintEntry] {
        (0..<count).map { FingerprintEntry(name: "host-\($0).pinstore.test", fingerprint: SHA256Digest.hash(Data("\($0)".utf8)), expires: 4_102_444_799) }
    }

    @Test func largeListVerifiesEveryEntry() throws {
        let key = try StoreFixtures.signingKey()
        let body = try TestLists.signedStatic(Self.entries(300), key: key)
        let verified = try FingerprintList.verifiedEntries(staticList: body, publicKey: key.publicKey)
        #expect(Set(verified.map(\.name)) == Set(Self.entries(300).map(\.name)))
    }

    @Test func largeListWithOneBadSignatureIsRefusedNamingTheFirstBadEntry() throws {
        let key = try StoreFixtures.signingKey()
        var entries = Self.entries(300)
        let good = try TestLists.signedStatic(entries, key: key)
        // Re-sign entries 150 and 250 with another key: both are bad, 150 comes first.
        let other = try StoreFixtures.otherSigningKey()
        var json = try JSONSerialization.jsonObject(with: good) as! [String: [[String: Any]]]
        for index in [150, 250] {
            json["fingerprints"]![index]["signature"] = try other.signature(for: entries[index].signedBytes).base64EncodedString()
        }
        entries.removeAll()
        let body = try JSONSerialization.data(withJSONObject: json)
        #expect {
            try FingerprintList.verifiedEntries(staticList: body, publicKey: key.publicKey)
        } throws: { error in
            (error as? PinStoreError)?.code == .invalidListSignature && (error as? PinStoreError)?.reason.hasPrefix("entry 151 ") == true
        }
    }

    @Test func rawSignaturesAreAcceptedAsAConvenience() throws {
        let key = try StoreFixtures.signingKey()
        let entry = Self.entries(1)[0]
        let der = try key.signature(for: entry.signedBytes)
        // Convert DER to raw r||s through OpenSSL's own parser to build the test input.
        let raw = try #require(RawSignature.fromDER(der))
        let body = try JSONSerialization.data(withJSONObject: ["fingerprints": [[
            "name": entry.name, "fingerprint": entry.fingerprint.base64EncodedString(),
            "expires": entry.expires, "signature": raw.base64EncodedString()]]])
        #expect(try FingerprintList.verifiedEntries(staticList: body, publicKey: key.publicKey) == [entry])
    }

    @Test func challengeResponseFixtureVerifiesOverItsChallenge() throws {
        let body = try StoreFixtures.list("challenge-good.json")
        let result = try FingerprintList.verifiedEntries(
            challengeResponse: body, challenge: TestResources.fixtureText("lists/challenge.txt"),
            signature: TestResources.fixtureText("lists/challenge-good.sig"),
            publicKey: P256PublicKey(configuredString: StoreFixtures.publicKey()))
        #expect(result.entries.map(\.name) == ["localhost"])
        #expect(result.timestamp == 1_767_225_600)
    }
}

@Suite struct ParallelVerificationTests {
    @Test(arguments: [(64, 12), (65, 16), (67, 11), (71, 10), (64, 64), (200, 3), (1_000, 7), (64, 128)])
    func workerSharesCoverEveryEntryOnceWhateverTheCoreCount(count: Int, workers: Int) {
        let shares = (0..<workers).map { ListSignatureVerifier.share(of: $0, workers: workers, count: count) }
        #expect(shares.flatMap { Array($0) } == Array(0..<count))
    }

    @Test(arguments: [1, 2, 10, 12, 16, 64])
    func listOfSixtyFiveEntriesVerifiesOnAnyCoreCount(cores: Int) throws {
        let key = try StoreFixtures.signingKey()
        let body = try TestLists.signedStatic(FingerprintListTests.entries(65), key: key)
        let verifier = ListSignatureVerifier(publicKey: try key.publicKey)
        #expect(try verifier.verifyStatic(FingerprintListDocument(body: body), cores: cores).count == 65)
    }
}

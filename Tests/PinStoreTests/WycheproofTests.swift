import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// Project Wycheproof ECDSA P-256/SHA-256 vectors (C2SP/wycheproof, Apache-2.0), read from
/// `../shared/vectors/wycheproof/`.
@Suite(.enabled(if: TestResources.sharedVectorsAvailable, TestResources.sharedVectorsMissing))
struct WycheproofTests {
    struct File: Decodable {
        struct Group: Decodable {
            struct Key: Decodable { let uncompressed: String }
            struct Case: Decodable { let tcId: Int; let comment: String; let msg: String; let sig: String; let result: String }
            let publicKey: Key
            let publicKeyDer: String
            let tests: [Case]
        }
        let numberOfTests: Int
        let testGroups: [Group]
    }

    struct Tally: CustomStringConvertible {
        var checked = 0
        var acceptableAccepted: [Int] = []
        var acceptableRejected: [Int] = []
        var description: String {
            "\(checked) vectors; acceptable accepted: \(acceptableAccepted), acceptable rejected: \(acceptableRejected)"
        }
    }

    func run(_ name: String, raw: Bool) throws -> Tally {
        let file = try JSONDecoder().decode(File.self, from: TestResources.sharedVector("wycheproof/\(name)"))
        var tally = Tally()
        for group in file.testGroups {
            let key = try P256PublicKey(x963Representation: try #require(Data(hex: group.publicKey.uncompressed)))
            // The DER form of the same key must agree with the point.
            let derKey = try P256PublicKey(derSubjectPublicKeyInfo: try #require(Data(hex: group.publicKeyDer)))
            #expect(derKey.x963Representation == key.x963Representation)
            for test in group.tests {
                let message = try #require(Data(hex: test.msg))
                let signature = try #require(Data(hex: test.sig))
                let verified = raw ? key.isValidRawSignature(signature, for: message) : key.isValidSignature(signature, for: message)
                switch test.result {
                case "valid":
                    #expect(verified, "tcId \(test.tcId) (\(test.comment)) is valid but did not verify")
                case "invalid":
                    #expect(!verified, "tcId \(test.tcId) (\(test.comment)) is invalid but verified")
                default:
                    if verified { tally.acceptableAccepted.append(test.tcId) } else { tally.acceptableRejected.append(test.tcId) }
                }
                tally.checked += 1
            }
        }
        #expect(tally.checked == file.numberOfTests)
        return tally
    }

    @Test func derSignatureVectorsBehaveAsSpecified() throws {
        let tally = try run("ecdsa_secp256r1_sha256_test.json", raw: false)
        print("Wycheproof DER: \(tally)")
    }

    @Test func rawSignatureVectorsBehaveAsSpecified() throws {
        let tally = try run("ecdsa_secp256r1_sha256_p1363_test.json", raw: true)
        print("Wycheproof P1363: \(tally)")
    }
}

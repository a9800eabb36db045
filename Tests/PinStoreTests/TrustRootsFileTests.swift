import Foundation
import Testing
@testable import PinStore
import PinStoreTestSupport

/// A private CA as it arrives: a file.
@Suite struct TrustRootsFileTests {
    @Test func anchorsFromAPEMFileValidateTheChainsTheyIssued() throws {
        let anchors = try TrustRoots.anchors(contentsOf: URL(fileURLWithPath: TestResources.fixturePath("pki/root-ca.pem")))
        #expect(anchors.anchors.count == 1)
        let chainFile = URL(fileURLWithPath: TestResources.fixturePath("pki/localhost-chain.pem"))
        let chain = try X509Certificate.certificates(fileContents: Data(contentsOf: chainFile)).map(\.derRepresentation)
        #expect(throws: Never.self) { try ChainValidator(trustRoots: anchors).validate(chain: chain, hostname: "localhost") }
    }

    @Test func aMissingAnchorFileIsATypedError() {
        #expect(throws: PinStoreError.self) {
            try TrustRoots.anchors(contentsOf: URL(fileURLWithPath: "/nonexistent/pinstore/ca.pem"))
        }
    }

    @Test func aFolderIsNoAnchorFileAndTheMessageSaysSoInWords() {
        let error = #expect(throws: PinStoreError.self) {
            try TrustRoots.anchors(contentsOf: FileManager.default.temporaryDirectory)
        }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.reason.contains("it is not a regular file") == true)
    }
}

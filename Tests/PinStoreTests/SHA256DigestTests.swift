import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore
import PinStoreSigning

@Suite struct SHA256DigestTests {
    // FIPS 180-2 appendix B.1 ("abc") and the empty-string digest.
    @Test func hashOfABCMatchesFIPSVector() {
        #expect(SHA256Digest.hash(Data("abc".utf8)) == Data(hex: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
    }

    @Test func hashOfEmptyInputMatchesKnownDigest() {
        #expect(SHA256Digest.hash(Data()) == Data(hex: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"))
    }

    @Test func hashOfNonContiguousBytesEqualsHashOfContiguousCopy() {
        let chunks: [UInt8] = Array(repeating: 0x61, count: 1_000)
        let dispatchData = chunks.withUnsafeBytes { DispatchData(bytes: $0) }
        #expect(SHA256Digest.hash(dispatchData) == SHA256Digest.hash(Data(chunks)))
    }
}

@Suite struct ConstantTimeTests {
    @Test func equalBytesCompareEqual() {
        #expect(ConstantTime.equals(Data([1, 2, 3]), Data([1, 2, 3])))
    }

    @Test func bytesDifferingInLastPositionCompareUnequal() {
        #expect(!ConstantTime.equals(Data([1, 2, 3]), Data([1, 2, 4])))
    }

    @Test func differentLengthsCompareUnequal() {
        #expect(!ConstantTime.equals(Data([1, 2, 3]), Data([1, 2])))
    }
}

@Suite struct OpenSSLLibraryTests {
    @Test func runsOnOpenSSL3() {
        #expect(OpenSSLLibrary.versionNumber >= 0x3000_0000, "linked \(OpenSSLLibrary.versionText)")
        #expect(OpenSSLLibrary.versionText.hasPrefix("OpenSSL 3"))
    }

    @Test func errorQueueIsEmptyAfterAFailedVerification() throws {
        let key = try P256PrivateKey().publicKey
        _ = key.isValidSignature(Data([0x30, 0x01]), for: Data())
        #expect(OpenSSLErrorQueue.drain().isEmpty)
    }
}

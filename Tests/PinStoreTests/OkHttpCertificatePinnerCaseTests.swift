import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// OkHttp's `CertificatePinnerTest` (and the `findMatchingPins` cases of its Kotlin companion
/// `CertificatePinnerKotlinTest`), replayed against ``PinPolicy`` host patterns. OkHttp's
/// `sha256/` pins match any certificate of the chain: ``PinIdentity/anyKey(spkiSHA256Base64:)``.
///
/// Differences PinStore keeps on purpose, each stated by a test below: a policy needs two
/// distinct pins (OkHttp's one-pin cases get a never-matching backup pin), SHA-256 only (no
/// `sha1/`), a host no policy covers is refused as unpinned, malformed host names are refused,
/// and overlapping patterns do not union: the most specific one supplies the pins (as Apple,
/// Android and TrustKit do; OkHttp unions).
@Suite struct OkHttpCertificatePinnerCaseTests {
    typealias P = PeerCase

    /// OkHttp's `CertificatePinner.Builder().add(pattern, pins...)`, one entry per pattern. A
    /// pattern with one pin gets a backup pin no fixture matches (PinStore's two-pin rule).
    static func pinner(_ entries: KeyValuePairs<String, [String]>) throws -> PinStore {
        try P.store(entries.map { pattern, certificates in
            var digests = try certificates.map { try P.spki($0) }
            if digests.count < 2 { digests.append(P.fake1) }
            return P.anyKeyPolicy(pattern, digests)
        })
    }

    static func leaf(_ certificate: String) throws -> [Data] { try P.chain(certificate) }

    // MARK: - Exact host names

    // successfulCheck
    @Test func successfulCheck() throws {
        let pinner = try Self.pinner(["example.com": [P.a]])
        #expect(P.check(pinner, "example.com", try Self.leaf(P.a)) == .trusted)
    }

    // successfulMatchAcceptsAnyMatchingCertificate (and ...Old)
    @Test func successfulMatchAcceptsAnyMatchingCertificate() throws {
        let pinner = try Self.pinner(["example.com": [P.b]])
        #expect(P.check(pinner, "example.com", try P.chain(P.a, P.b)) == .trusted)
    }

    // unsuccessfulCheck
    @Test func unsuccessfulCheck() throws {
        let pinner = try Self.pinner(["example.com": [P.a]])
        #expect(P.check(pinner, "example.com", try Self.leaf(P.b)) == .untrusted)
    }

    // multipleCertificatesForOneHostname
    @Test func multipleCertificatesForOneHostname() throws {
        let pinner = try Self.pinner(["example.com": [P.a, P.b]])
        #expect(P.check(pinner, "example.com", try Self.leaf(P.a)) == .trusted)
        #expect(P.check(pinner, "example.com", try Self.leaf(P.b)) == .trusted)
        #expect(P.check(pinner, "example.com", try Self.leaf(P.c)) == .untrusted)
    }

    // multipleHostnamesForOneCertificate
    @Test func multipleHostnamesForOneCertificate() throws {
        let pinner = try Self.pinner(["example.com": [P.a], "www.example.com": [P.a]])
        #expect(P.check(pinner, "example.com", try Self.leaf(P.a)) == .trusted)
        #expect(P.check(pinner, "www.example.com", try Self.leaf(P.a)) == .trusted)
    }

    // successfulFindMatchingPins: first.com's pins are A and B, not second.com's C.
    @Test func successfulFindMatchingPins() throws {
        let pinner = try Self.pinner(["first.com": [P.a, P.b], "second.com": [P.c]])
        #expect(P.check(pinner, "first.com", try Self.leaf(P.a)) == .trusted)
        #expect(P.check(pinner, "first.com", try Self.leaf(P.b)) == .trusted)
        #expect(P.check(pinner, "first.com", try Self.leaf(P.c)) == .untrusted)
        #expect(P.check(pinner, "second.com", try Self.leaf(P.c)) == .trusted)
    }

    // absentHostnameMatches: OkHttp lets a host no pattern covers through; PinStore refuses it
    // as unpinned (`.empty`: cancel the connection).
    @Test func absentHostnameIsRefusedAsUnpinnedUnlikeOkHttp() throws {
        let pinner = try Self.pinner(["other.example.net": [P.a]])
        #expect(P.check(pinner, "example.com", try Self.leaf(P.a)) == .empty)
        let failure = try PinPolicyTests.decide(pinner, "localhost-chain", host: "localhost").failure
        #expect(failure?.reason == .noPinsForHost(updateResult: nil))
    }

    // MARK: - `*.` (one label)

    // successfulCheckForWildcardHostname
    @Test func successfulCheckForWildcardHostname() throws {
        let pinner = try Self.pinner(["*.example.com": [P.a]])
        #expect(P.check(pinner, "a.example.com", try Self.leaf(P.a)) == .trusted)
    }

    // successfulMatchAcceptsAnyMatchingCertificateForWildcardHostname
    @Test func successfulMatchAcceptsAnyMatchingCertificateForWildcardHostname() throws {
        let pinner = try Self.pinner(["*.example.com": [P.b]])
        #expect(P.check(pinner, "a.example.com", try P.chain(P.a, P.b)) == .trusted)
    }

    // unsuccessfulCheckForWildcardHostname
    @Test func unsuccessfulCheckForWildcardHostname() throws {
        let pinner = try Self.pinner(["*.example.com": [P.a]])
        #expect(P.check(pinner, "a.example.com", try Self.leaf(P.b)) == .untrusted)
    }

    // multipleCertificatesForOneWildcardHostname
    @Test func multipleCertificatesForOneWildcardHostname() throws {
        let pinner = try Self.pinner(["*.example.com": [P.a, P.b]])
        #expect(P.check(pinner, "a.example.com", try Self.leaf(P.a)) == .trusted)
        #expect(P.check(pinner, "a.example.com", try Self.leaf(P.b)) == .trusted)
    }

    // successfulCheckForOneHostnameWithWildcardAndDirectCertificate: OkHttp unions the two
    // patterns' pins (A or B for a.example.com). PinStore applies the most specific policy, the
    // exact name's: B passes, A (the wildcard's pin) no longer does for a.example.com.
    @Test func wildcardAndDirectPinsDoNotUnionUnlikeOkHttp() throws {
        let pinner = try Self.pinner(["*.example.com": [P.a], "a.example.com": [P.b]])
        #expect(P.check(pinner, "a.example.com", try Self.leaf(P.b)) == .trusted)
        #expect(P.check(pinner, "a.example.com", try Self.leaf(P.a)) == .untrusted)
        // The wildcard still pins the names it alone covers.
        #expect(P.check(pinner, "b.example.com", try Self.leaf(P.a)) == .trusted)
    }

    // unsuccessfulCheckForOneHostnameWithWildcardAndDirectCertificate
    @Test func unsuccessfulCheckForOneHostnameWithWildcardAndDirectCertificate() throws {
        let pinner = try Self.pinner(["*.example.com": [P.a], "a.example.com": [P.b]])
        #expect(P.check(pinner, "a.example.com", try Self.leaf(P.c)) == .untrusted)
    }

    // successfulFindMatchingPinsForWildcardAndDirectCertificates: b.example.com's pin (C) never
    // applies to a.example.com, and a.example.com's (B) never to b.example.com.
    @Test func successfulFindMatchingPinsForWildcardAndDirectCertificates() throws {
        let pinner = try Self.pinner(["*.example.com": [P.a], "a.example.com": [P.b], "b.example.com": [P.c]])
        #expect(P.check(pinner, "a.example.com", try Self.leaf(P.c)) == .untrusted)
        #expect(P.check(pinner, "b.example.com", try Self.leaf(P.c)) == .trusted)
        #expect(P.check(pinner, "b.example.com", try Self.leaf(P.b)) == .untrusted)
    }

    // wildcardHostnameShouldNotMatchThroughDot + checkSubstringMatch (okhttp#3324): names
    // `*.example.com` does not cover are unpinned.
    @Test(arguments: ["example.com", "a.b.example.com", "a.example.com.notexample.com", "example.com.notexample.com",
                      "notexample.com", "ple.com", "com"])
    func oneLabelWildcardDoesNotCover(_ host: String) throws {
        let pinner = try Self.pinner(["*.example.com": [P.a]])
        #expect(P.check(pinner, host, try Self.leaf(P.b)) == .empty)
    }

    // checkSubstringMatch: the names `*.example.com` does cover.
    @Test(arguments: ["a.example.com", "example.example.com"])
    func oneLabelWildcardCovers(_ host: String) throws {
        let pinner = try Self.pinner(["*.example.com": [P.a]])
        #expect(P.check(pinner, host, try Self.leaf(P.b)) == .untrusted)
        #expect(P.check(pinner, host, try Self.leaf(P.a)) == .trusted)
    }

    // successfulFindMatchingPinsIgnoresCase
    @Test func successfulFindMatchingPinsIgnoresCase() throws {
        let pinner = try Self.pinner(["EXAMPLE.com": [P.a], "*.MyExample.Com": [P.b]])
        #expect(P.check(pinner, "example.com", try Self.leaf(P.a)) == .trusted)
        #expect(P.check(pinner, "example.com", try Self.leaf(P.b)) == .untrusted)
        #expect(P.check(pinner, "a.myexample.com", try Self.leaf(P.b)) == .trusted)
        #expect(P.check(pinner, "a.myexample.com", try Self.leaf(P.a)) == .untrusted)
    }

    // successfulFindMatchingPinPunycode: a Unicode pattern pins its xn-- form.
    @Test func successfulFindMatchingPinPunycode() throws {
        let pinner = try Self.pinner(["σkhttp.com": [P.a]])
        #expect(P.check(pinner, "xn--khttp-fde.com", try Self.leaf(P.a)) == .trusted)
        #expect(P.check(pinner, "xn--khttp-fde.com", try Self.leaf(P.b)) == .untrusted)
    }

    // MARK: - `**.` (the domain and any depth)

    // checkForHostnameWithDoubleAsterisk, "Should be pinned" (with B against a pin on A: refused).
    @Test(arguments: ["example.co.uk", "foo.example.co.uk", "foo.bar.example.co.uk", "foo.bar.baz.example.co.uk"])
    func checkForHostnameWithDoubleAsteriskPins(_ host: String) throws {
        let pinner = try Self.pinner(["**.example.co.uk": [P.a]])
        #expect(P.check(pinner, host, try Self.leaf(P.b)) == .untrusted)
        #expect(P.check(pinner, host, try Self.leaf(P.a)) == .trusted)
    }

    // checkForHostnameWithDoubleAsterisk, "Should not be pinned" (OkHttp passes them; PinStore
    // reports them unpinned).
    @Test(arguments: ["uk", "co.uk", "anotherexample.co.uk", "foo.anotherexample.co.uk"])
    func checkForHostnameWithDoubleAsteriskLeavesUnpinned(_ host: String) throws {
        let pinner = try Self.pinner(["**.example.co.uk": [P.a]])
        #expect(P.check(pinner, host, try Self.leaf(P.b)) == .empty)
    }

    // doubleWildcardHostnameShouldMatchThroughDot (the well-formed names).
    @Test(arguments: ["example.com", "a.b.example.com"])
    func doubleWildcardHostnameShouldMatchThroughDot(_ host: String) throws {
        let pinner = try Self.pinner(["**.example.com": [P.a]])
        #expect(P.check(pinner, host, try Self.leaf(P.b)) == .untrusted)
        #expect(P.check(pinner, host, try Self.leaf(P.a)) == .trusted)
    }

    // doubleWildcardHostnameShouldNotMatchSuffix
    @Test(arguments: ["xample.com", "dexample.com", "barnexample.com"])
    func doubleWildcardHostnameShouldNotMatchSuffix(_ host: String) throws {
        let pinner = try Self.pinner(["**.example.com": [P.a]])
        #expect(P.check(pinner, host, try Self.leaf(P.b)) == .empty)
    }

    // testGoodPin: `**.example.co.uk` matches www. and gopher., not www.example.com.
    @Test func testGoodPinMatchesHostnames() throws {
        let pinner = try Self.pinner(["**.example.co.uk": [P.a]])
        #expect(P.check(pinner, "www.example.co.uk", try Self.leaf(P.b)) == .untrusted)
        #expect(P.check(pinner, "gopher.example.co.uk", try Self.leaf(P.b)) == .untrusted)
        #expect(P.check(pinner, "www.example.com", try Self.leaf(P.b)) == .empty)
    }

    // doubleWildcardHostnameShouldMatchThroughDot / wildcardHostnameShouldNotMatchThroughDot /
    // checkSubstringMatch feed OkHttp names with empty labels (".example.com", "..example.com",
    // "a..example.com") and expect pattern matches. PinStore does not match patterns against
    // such names at all: they are no host names, and the chain is refused even when it carries
    // the pinned key.
    @Test(arguments: [".example.com", "..example.com", "a..example.com"])
    func malformedHostNamesAreRefusedUnlikeOkHttp(_ host: String) throws {
        let pinner = try Self.pinner(["**.example.com": [P.a], "*.example.com": [P.b]])
        #expect(P.check(pinner, host, try Self.leaf(P.a)) == .untrusted)
        #expect(P.check(pinner, host, try Self.leaf(P.b)) == .untrusted)
    }

    // MARK: - Pins and patterns refused

    // testBadHost: a wildcard that is not a whole first label.
    @Test func testBadHost() throws {
        let error = P.configurationError([P.anyKeyPolicy("example.*", [P.fake1, P.fake2])])
        #expect(error?.code == .invalidConfiguration)
    }

    // testBadPin: "sha256/a" (one Base64 character).
    @Test func testBadPin() throws {
        let error = P.configurationError([P.anyKeyPolicy("example.co.uk", ["a", P.fake1])])
        #expect(error?.code == .invalidConfiguration)
    }

    // testBadAlgorithm: a SHA-512-sized digest (64 bytes) is no SHA-256 pin.
    @Test func testBadAlgorithm() throws {
        let sha512Sized = Data(repeating: 0, count: 64).base64EncodedString()
        let error = P.configurationError([P.anyKeyPolicy("example.co.uk", [sha512Sized, P.fake1])])
        #expect(error?.code == .invalidConfiguration)
    }

    // malformedBase64
    @Test func malformedBase64() throws {
        let error = P.configurationError([P.anyKeyPolicy("example.com", ["DmxUShsZuNiqPQsX2Oi9uv2sCnw*", P.fake1])])
        #expect(error?.code == .invalidConfiguration)
    }

    // malformedPin ("md5/"), testMatchesSha1, successfulCheckSha1Pin: OkHttp accepts `sha1/` pins;
    // PinStore pins are SHA-256 only, so a 20-byte (SHA-1 sized) digest is refused.
    @Test func sha1PinsAreRefusedUnlikeOkHttp() throws {
        let sha1 = Data(repeating: 0x5A, count: 20).base64EncodedString()
        let error = P.configurationError([P.anyKeyPolicy("example.com", [sha1, P.fake1])])
        #expect(error?.code == .invalidConfiguration)
    }

    // OkHttp pins a host with a single pin (successfulCheck and most cases above); PinStore refuses
    // a policy without a backup pin.
    @Test func aSinglePinIsRefusedUnlikeOkHttp() throws {
        let error = P.configurationError([P.anyKeyPolicy("example.com", [try P.spki(P.a)])])
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.reason.contains("backup pin") == true)
    }

    // sameKeypairSamePin: certificates with one key pair have one pin, and a key pin admits the renewal.
    @Test func sameKeypairSamePin() throws {
        #expect(try P.spki("localhost-renewed") == P.spki(P.a))
        #expect(try P.spki(P.b) != P.spki(P.a))
        let pinner = try Self.pinner(["example.com": [P.a]])
        #expect(P.check(pinner, "example.com", try Self.leaf("localhost-renewed")) == .trusted)
    }
}

import Foundation
import PinStoreTestSupport
import Testing
@testable import PinStore

/// ``HostName``, the one form a host takes inside PinStore.
@Suite struct HostNameValueTests {
    /// The one-pass path of `HostName.init` must only ever take names the full path (lookup
    /// key, then the host-character check) leaves exactly as they are. 200,000 names of 1 to 40
    /// bytes (one word, several, and a tail) from an alphabet of every kind of byte the two
    /// paths tell apart, mostly letters so that long names are accepted too.
    @Test func theOnePassPathAcceptsOnlyNamesTheFullPathLeavesUnchanged() {
        let alphabet = Array("az09-_*.A:[] /\u{7f}\u{00}é".utf8)
        var generator = SystemRandomNumberGenerator()
        var accepted = 0, acceptedLong = 0
        for _ in 0..<200_000 {
            let count = Int.random(in: 1...40, using: &generator)
            let bytes = (0..<count).map { _ in
                Int.random(in: 0..<3, using: &generator) == 0 ? alphabet.randomElement(using: &generator)! : UInt8(ascii: "q")
            }
            let name = String(decoding: bytes, as: UTF8.self)
            guard HostName.isAlreadyNormalized(name) else { continue }
            accepted += 1
            if bytes.count > 16 { acceptedLong += 1 }
            let full = HostName.lookupKey(name).flatMap { HostName.hasHostCharacters($0) ? $0 : nil }
            #expect(full == name, "\(String(reflecting: name))")
            if full != name { return }
        }
        // The generator does produce names the one-pass path takes, longer than two words too.
        #expect(accepted > 1_000 && acceptedLong > 100, "\(accepted), \(acceptedLong) longer than 16 bytes")
    }

    /// What the one-pass path accepts, written as its definition: lowercase ASCII letters,
    /// digits, `-`, `_`, `*` and dots, with no empty label (no leading, trailing or double dot).
    static func normalizedByDefinition(_ bytes: [UInt8]) -> Bool {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_*.".utf8)
        return !bytes.isEmpty && bytes.allSatisfy(allowed.contains)
            && bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).allSatisfy { !$0.isEmpty }
    }

    static func wordScan(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer(HostName.isAlreadyNormalized(bytes:))
    }

    /// The scan reads eight bytes at a time and the last one to seven apart: every byte value,
    /// at every position of names of 1 to 20 bytes (inside a word, at its edges, in the tail),
    /// is judged as the definition judges it.
    @Test func theWordScanJudgesEveryByteAtEveryPosition() {
        var wrong: [String] = []
        for count in 1...20 {
            for position in 0..<count {
                for byte in UInt8.min...UInt8.max {
                    var bytes = [UInt8](repeating: UInt8(ascii: "k"), count: count)
                    bytes[position] = byte
                    if Self.wordScan(bytes) != Self.normalizedByDefinition(bytes) { wrong.append("\(count)/\(position)/\(byte)") }
                }
            }
        }
        #expect(wrong.isEmpty, "length/position/byte: \(wrong.prefix(20))")
    }

    /// An empty label is two dots in a row, wherever they fall: inside a word, across the
    /// boundary between two words, between the last word and the tail, and at the start.
    @Test func theWordScanRefusesADotAfterADotAtEveryPosition() {
        var wrong: [String] = []
        for count in 2...26 {
            for position in 0..<(count - 1) {
                var bytes = [UInt8](repeating: UInt8(ascii: "k"), count: count)
                bytes[position] = UInt8(ascii: ".")
                bytes[position + 1] = UInt8(ascii: ".")
                let doubled = Self.wordScan(bytes)
                // One dot of the two, inside the name, is a label separator.
                bytes[position + 1] = UInt8(ascii: "k")
                let single = Self.wordScan(bytes)
                if doubled || single != (position > 0) { wrong.append("\(count)/\(position)") }
            }
        }
        #expect(wrong.isEmpty, "length/position of the first dot: \(wrong.prefix(20))")
    }

    /// Random names of 1 to 40 bytes over every kind of byte the definition tells apart.
    @Test func theWordScanAgreesWithTheDefinitionOnRandomNames() {
        let alphabet = Array("az09-_*./:`{A@\u{7f}\u{00} ".utf8) + [0x80, 0xC3, 0xFF]
        var generator = SystemRandomNumberGenerator()
        var accepted = 0
        for _ in 0..<100_000 {
            let count = Int.random(in: 1...40, using: &generator)
            // Mostly letters, so that long names are sometimes accepted.
            let bytes = (0..<count).map { _ in
                Int.random(in: 0..<4, using: &generator) == 0 ? alphabet.randomElement(using: &generator)! : UInt8(ascii: "q")
            }
            let expected = Self.normalizedByDefinition(bytes)
            #expect(Self.wordScan(bytes) == expected, "\(bytes)")
            if Self.wordScan(bytes) != expected { return }
            if expected { accepted += 1 }
        }
        #expect(accepted > 1_000)
    }

    @Test func aNameIsLowercasedWithoutItsTrailingDot() throws {
        #expect(try HostName("API.Example.COM.").text == "api.example.com")
    }

    @Test func anInternationalizedNameTakesItsIDNAForm() throws {
        #expect(try HostName("bücher.example").text == "xn--bcher-kva.example")
    }

    @Test func anInternationalizedNameInCapitalsTakesTheSameForm() throws {
        #expect(try HostName("BÜCHER.example").text == "xn--bcher-kva.example")
    }

    @Test func theIDNAFormIsTheOneURLPutsOnTheWire() throws {
        let wire = try #require(URL(string: "https://bücher.example/")?.host)
        #expect(try HostName("bücher.example").text == wire)
    }

    @Test func anIPv6AddressIsCanonicalAndWithoutBrackets() throws {
        #expect(try HostName("[0:0:0:0:0:0:0:1]").text == "::1")
        #expect(try HostName("[::1]").isIPAddress)
    }

    @Test(arguments: ["", ".", "a..b", ".a", "a b", "a\0b", "a\u{7f}b", "bü cher.example", "bü/cher.example"])
    func aNameThatCanNeverBeAHostIsRefused(_ name: String) {
        #expect(throws: PinStoreError.self) { try HostName(name) }
    }

    @Test func theRefusalSaysWhatIsWrong() {
        do {
            _ = try HostName("a..b")
            Issue.record("a..b was accepted")
        } catch {
            #expect(error.code == .invalidHostName)
            #expect(error.reason.contains("empty label"))
        }
    }

    @Test func validateFindsPinsOfAnInternationalizedNameUnderItsUnicodeSpelling() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let entry = FingerprintEntry(name: "xn--bcher-kva.example", fingerprint: try TestResources.certificate("pki/localhost.pem").fingerprint,
                                     expires: 4_102_444_799)
        let store = try StoreFixtures.store(ScriptedFetcher.serving(try TestLists.signedStatic([entry], key: StoreFixtures.signingKey())),
                                            directory: directory.url)
        #expect(await store.update() == .ok)
        #expect(store.matchPins(commonName: "bücher.example", certificateData: try StoreFixtures.der("localhost")) == .trusted)
    }

    @Test func aPolicyWrittenInUnicodeAppliesToTheIDNAHost() throws {
        // The policy pins localhost.pem's key for bücher.example; a chain for the xn-- host
        // with another key is a pin mismatch, never a host without pins.
        let policy = PinPolicy(domain: "bücher.example", pins: [.leafKey(spkiSHA256Base64: try PinPolicyTests.spki("localhost")),
                                                               .leafKey(spkiSHA256Base64: PinPolicyTests.backup)])
        let store = try ReportOnlyTests.store(enforcement: .enforced, policies: [policy])
        #expect(store.pinDecision(host: "xn--bcher-kva.example", validatedChain: try TestResources.chainDER("pki/attacker-chain.pem"))
            .failure?.reason == .pinMismatch)
        #expect(store.pinDecision(host: "xn--bcher-kva.example", validatedChain: try TestResources.chainDER("pki/localhost-chain.pem"))
            .isAllowed)
    }
}

/// Names written with a scheme, a port or a path can never match a connection: refused where
/// they are configured, never left to pin nothing.
@Suite struct HostNameCharacterTests {
    @Test(arguments: ["api.example.com:443", "https://api.example.com", "api.example.com/", "user@api.example.com", "a,b.example"])
    func aNameWithCharactersNoHostHasIsRefused(_ name: String) {
        #expect(throws: PinStoreError.self) { try HostName(name) }
    }

    @Test func theRefusalSaysToWriteTheHostAlone() {
        do {
            _ = try HostName("api.example.com:443")
            Issue.record("api.example.com:443 was accepted")
        } catch {
            #expect(error.reason.contains("without a scheme, port or path"))
        }
    }

    @Test func aPolicyDomainWithAPortIsAConfigurationError() {
        let policy = PinPolicy(domain: "api.example.com:443", pins: [.leafKey(spkiSHA256Base64: PinPolicyTests.backup),
                                                                    .caKey(spkiSHA256Base64: Data(repeating: 1, count: 32).base64EncodedString())])
        #expect(throws: PinStoreError.self) { try policy.check() }
    }

    @Test func anExpectedNameWithASchemeIsAConfigurationError() throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        #expect(throws: PinStoreError.self) {
            try StoreFixtures.store(ScriptedFetcher.serving(Data()), directory: directory.url, expectedCommonNames: ["https://api.example.com"])
        }
    }

    @Test func anIPv6AddressKeepsItsColons() throws {
        #expect(try HostName("2001:db8::1").text == "2001:db8::1")
    }

    @Test func anUnderscoreLabelIsAHostName() throws {
        #expect(try HostName("_service.example.com").text == "_service.example.com")
    }
}

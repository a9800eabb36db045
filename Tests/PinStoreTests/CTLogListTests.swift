import Foundation
import Testing
@testable import PinStore
import PinStoreSigning

/// The `certificateTransparency` section of the signed list (``CTLogList``): lenient where a
/// future list may grow, strict where a log key or a mode could hide.
@Suite struct CTLogListTests {
    static func spki() throws -> Data { try P256PrivateKey().publicKey.derRepresentation }

    static func log(key: Data, id: String? = nil, operatorName: String = "Operator A", type: String? = nil,
                    state: String = "usable", stateTimestamp: Int64? = nil) -> CTLogList.Wire.Log {
        CTLogList.Wire.Log(key: key.base64EncodedString(), id: id, operator: operatorName, type: type, state: state,
                           stateTimestamp: stateTimestamp, temporalInterval: nil, previousOperators: nil)
    }

    static func section(_ logs: [CTLogList.Wire.Log], hosts: [CTLogList.Wire.Host]? = nil, profile: String? = nil,
                        timestamp: Int64 = 1_790_000_000) -> CTLogList.Wire {
        CTLogList.Wire(logListTimestamp: timestamp, profile: profile, logs: logs, hosts: hosts)
    }

    static func refusal(_ wire: CTLogList.Wire) -> PinStoreError? {
        do {
            _ = try CTLogList(wire)
            return nil
        } catch {
            return error
        }
    }

    @Test func aLogIsKnownByTheSHA256OfItsKey() throws {
        let key = try Self.spki()
        let list = try CTLogList(Self.section([Self.log(key: key, id: SHA256Digest.hash(key).base64EncodedString())]))
        let id = try #require(Digest32(SHA256Digest.hash(key)))
        #expect(list.logs[id]?.operatorName == "Operator A")
    }

    @Test func aLogWhoseIdIsNotTheHashOfItsKeyRefusesTheList() throws {
        let key = try Self.spki()
        let other = try Self.spki()
        let error = try #require(Self.refusal(Self.section([Self.log(key: key, id: SHA256Digest.hash(other).base64EncodedString())])))
        #expect(error.code == .invalidListData)
        #expect(error.reason.contains("is not the SHA-256 of its key"))
    }

    @Test func aKeyThatIsNotBase64RefusesTheList() throws {
        let wire = Self.section([CTLogList.Wire.Log(key: "not base64!", id: nil, operator: "A", type: nil, state: "usable",
                                                    stateTimestamp: nil, temporalInterval: nil, previousOperators: nil)])
        #expect(Self.refusal(wire)?.reason.contains("not valid Base64") == true)
    }

    @Test func aLogNamedTwiceRefusesTheList() throws {
        let key = try Self.spki()
        #expect(Self.refusal(Self.section([Self.log(key: key), Self.log(key: key, operatorName: "Operator B")]))?.reason
            .contains("named twice") == true)
    }

    @Test func anUnknownLogTypeRefusesTheList() throws {
        #expect(Self.refusal(Self.section([Self.log(key: try Self.spki(), type: "rfc9162")]))?.reason.contains("type") == true)
    }

    @Test func anUnknownProfileRefusesTheList() throws {
        #expect(Self.refusal(Self.section([], profile: "firefox"))?.reason.contains("profile") == true)
    }

    @Test func anUnknownModeRefusesTheList() throws {
        let hosts = [CTLogList.Wire.Host(name: "api.example.com", mode: "enforced")]
        #expect(Self.refusal(Self.section([], hosts: hosts))?.reason.contains("mode") == true)
    }

    @Test func twoEquallySpecificHostsRefuseTheList() throws {
        let hosts = [CTLogList.Wire.Host(name: "api.example.com", mode: "enforce"), .init(name: "API.example.com.", mode: "off")]
        #expect(Self.refusal(Self.section([], hosts: hosts))?.reason.contains("ambiguous") == true)
    }

    @Test func anUnknownMemberInAHostEntryRefusesTheSection() throws {
        let json = #"{"logListTimestamp": 1790000000, "hosts": [{"name": "api.example.com", "mode": "enforce", "subdomains": true}]}"#
        #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode(CTLogList.Wire.self, from: Data(json.utf8)) }
    }

    @Test func anUnknownStateIsReadAndNeverCounts() throws {
        let key = try Self.spki()
        let list = try CTLogList(Self.section([Self.log(key: key, state: "probation")]))
        let log = try #require(list.logs.values.first)
        #expect(log.state == .unknown("probation"))
        #expect(!CTCompliance.counts(log, timestamp: 1_000, leafNotAfter: 2_000_000_000, profile: .chrome))
    }

    @Test func unknownMembersAreIgnored() throws {
        let key = try Self.spki().base64EncodedString()
        let json = """
        {"logListTimestamp": 1790000000, "futureMember": {"x": 1},
         "logs": [{"key": "\(key)", "operator": "Tiled Only", "type": "static-ct-api", "state": "usable", "mmd": 86400}]}
        """
        let list = try CTLogList(JSONDecoder().decode(CTLogList.Wire.self, from: Data(json.utf8)))
        #expect(list.logs.values.first?.kind == .staticCTAPI)
        #expect(list.logs.values.first?.operatorName == "Tiled Only")
    }

    @Test func theMostSpecificHostEntryGivesTheMode() throws {
        let hosts = [CTLogList.Wire.Host(name: "**.example.com", mode: "reportOnly"),
                     .init(name: "*.example.com", mode: "off"),
                     .init(name: "api.example.com", mode: "enforce")]
        let list = try CTLogList(Self.section([], hosts: hosts))
        #expect(list.mode(for: "api.example.com") == .enforce)
        #expect(list.mode(for: "www.example.com") == .off)
        #expect(list.mode(for: "a.b.example.com") == .reportOnly)
        #expect(list.mode(for: "example.org") == nil)
    }

    @Test func theLogListIsStaleSeventyDaysAfterItsTimestamp() throws {
        let list = try CTLogList(Self.section([], timestamp: 1_790_000_000))
        #expect(!list.isStale(at: 1_790_000_000 + 70 * 86_400))
        #expect(list.isStale(at: 1_790_000_000 + 70 * 86_400 + 1))
    }

    @Test func anSCTIsCountedUnderTheOperatorOfItsTime() throws {
        let key = try Self.spki()
        var wire = Self.log(key: key, operatorName: "New Operator")
        wire = CTLogList.Wire.Log(key: wire.key, id: nil, operator: "New Operator", type: nil, state: "usable", stateTimestamp: nil,
                                  temporalInterval: nil, previousOperators: [.init(name: "Old Operator", endTime: 1_700_000_000)])
        let log = try #require(try CTLogList(Self.section([wire])).logs.values.first)
        #expect(log.operatorName(atMilliseconds: 1_600_000_000_000) == "Old Operator")
        #expect(log.operatorName(atMilliseconds: 1_700_000_000_000) == "New Operator")
    }
}

/// A signed list whose CT section is bad is refused whole by a store, and the pins in force
/// stay: the section is read before anything is installed.
@Suite struct CTSectionUpdateTests {
    /// A static list pinning `fingerprint` for api.example.com, with `section` (raw JSON) as its
    /// CT member, signed per entry and as a whole with the fixture key.
    static func list(section: String?, fingerprint: UInt8, timestamp: Int64) throws -> Data {
        let key = try StoreFixtures.signingKey()
        let entry = FingerprintEntry(name: "api.example.com", fingerprint: Data(repeating: fingerprint, count: 32), expires: 4_102_444_799)
        let signature = try FingerprintListSigner(privateKey: key).signature(for: entry).base64EncodedString()
        let member = section.map { "\"certificateTransparency\": \($0), " } ?? ""
        let body = """
        {"listSignature": "", \(member)"timestamp": \(timestamp), "fingerprints": [{"name": "api.example.com", \
        "fingerprint": "\(entry.fingerprint.base64EncodedString())", "expires": 4102444799, "signature": "\(signature)"}]}
        """
        return try WholeListSignature.sign(Data(body.utf8), with: key)
    }

    @Test func aListWithALogWhoseIdIsNotItsKeysHashIsRefusedAndThePinsStay() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.cleanUp() }
        let fetcher = ScriptedFetcher.serving(try Self.list(section: nil, fingerprint: 1, timestamp: 1_893_000_000))
        let store = try StoreFixtures.store(fetcher, directory: directory.url)
        #expect(await store.update() == .ok)
        let before = store.storedEntries
        let key = try P256PrivateKey().publicKey.derRepresentation
        let wrongID = SHA256Digest.hash(Data("another key".utf8)).base64EncodedString()
        let section = #"{"logListTimestamp": 1893000000, "logs": [{"key": "\#(key.base64EncodedString())", "id": "\#(wrongID)", "operator": "A", "state": "usable"}]}"#
        let tampered = try Self.list(section: section, fingerprint: 2, timestamp: 1_893_100_000)
        fetcher.answer { _ in FingerprintListResponse(statusCode: 200, headers: [:], body: tampered) }
        #expect(await store.update(mode: .forced) == .invalidData)
        #expect(store.storedEntries == before)
        #expect(store.storedEntries.first?.fingerprint == Data(repeating: 1, count: 32))
    }
}
